import type { ProposalView } from '../channel/channel.js';
import type { ResponseCache } from '../session/cache.js';
import type { Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import type { Spend } from './accounting.js';
import type { Ending } from './ending.js';
import type { ProgressListener } from './progress-events.js';
import type { Journal } from './journal.js';
import type { CallModel } from './model-calls.js';

export interface RunOptions {
  workflow: Workflow;
  inputs: Record<string, Scalar>;
  runId: string;
  sessionPath: string;
  /** The files this run keeps (its session file, the response cache's file): no tool may write them, wherever they are. */
  ownFiles?: readonly string[];
  /** The directory setup steps and workspace tools run in. */
  workspace: string;
  /** The process environment that setup steps and run_command start from. */
  env: NodeJS.ProcessEnv;
  modelOverride?: string;
  callModel: CallModel;
  /** Where events go; when resuming or replaying, also where recorded answers come from. */
  journal: Journal;
  /** The limits the run starts with: the workflow's, or for a resume those its recording started with. */
  limits: Limits;
  /**
   * A resume's limits from where the recording ends: when they differ from the recorded ones, a
   * `limits_changed` event records them at that point (after the `resumed` event).
   */
  limitsOnLive?: Limits;
  /** Written first when the recording is used up (a resume's `resumed` event). */
  onLive?: () => void;
  /** False for --replay and --offline: a model call nothing recorded or cached can answer fails the run instead of reaching the network. */
  liveCalls?: boolean;
  /** Responses kept across runs (--cache): a hit costs nothing and calls no one. */
  cache?: ResponseCache;
  /** Time the run had already used before it was resumed, for limits.timeout. */
  elapsedBeforeMs?: number;
  progress: ProgressListener;
  /** False for --replay: MCP servers are not started, their tools come from the recording. */
  startServers?: boolean;
  /** Hides secrets in what tools outside conclave answer (MCP servers). */
  mask?: (text: string) => string;
}

export interface RunResult extends Ending {
  outputs: Record<string, string>;
  /** Outputs whose values could not be evaluated, with where and why. */
  outputErrors: string[];
  usage: Spend;
  agents: Record<string, { turns: number; spend: Spend }>;
  proposals: ProposalView[];
  /** What this process's live calls cost (a resume or replay pays nothing for what was recorded). */
  paidUsd: number;
  /** Answers the response cache gave (not in `usage`: they cost nothing). */
  cached: { calls: number; tokens: number };
  /** The limits in force when the run ended. */
  limits: Limits;
}
