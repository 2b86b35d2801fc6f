import type { CacheMiss } from '../session/cache-misses.js';
import type { FallbackAnswers } from './calls/model-calls.js';
import type { ProviderName } from '../provider/clouds.js';
import type { DocumentView, ProposalView } from '../channel/channel.js';
import type { ResponseCache } from '../session/cache.js';
import type { Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import type { BatchUse, PromptCacheUse, Spend } from './ceilings/accounting.js';
import type { Ending } from './ending.js';
import type { ProgressListener } from './progress-events.js';
import type { Journal } from './replay/journal.js';
import type { BatchApi } from '../provider/batch-api.js';
import type { CallModel, PoolsCeiling } from './calls/call-model.js';
import type { ToolUse } from '../agents/turn.js';
import type { ToolResult } from '../agents/tools/tool.js';
import type { Ballot } from '../session/ballot.js';
import type { HumanVote } from '../session/format.js';
import type { RunTrust } from './trust/trust.js';
import type { ModelRequest } from '../provider/messages.js';

/** Where turns run when not in this process: --workers (docs/workers.md). */
export interface TurnsElsewhere {
  /** A turn whose model calls and workspace tools run elsewhere; `env` is the workflow's `env:`, filled in. */
  open(agent: string, turn: number, env: Record<string, string>): TurnElsewhere;
}

export interface TurnElsewhere {
  call: CallModel;
  tool(use: ToolUse, readOnly: boolean, signal: AbortSignal): Promise<ToolResult>;
  /** The turn is over. */
  close(): void;
}

export interface RunOptions {
  workflow: Workflow;
  inputs: Record<string, Scalar>;
  /** Who the run is. */
  identity: {
    runId: string;
    /** The session path the run's expressions see (`run.session`). */
    sessionPath: string;
    /** The files this run keeps (its session file, the response cache's file): no tool may write them, wherever they are. */
    ownFiles?: readonly string[];
    /** Where the run's model providers keep credentials: no tool reads them (docs/security.md). */
    credentials?: { files: readonly string[]; dirs: readonly string[] };
    /** The providers the run reaches, decided once by the command: no tool's environment holds their credentials. */
    providers: readonly ProviderName[];
  };
  /** Where it runs. */
  place: {
    /** The directory setup steps and workspace tools run in. */
    workspace: string;
    /** The process environment that setup steps and run_command start from. */
    env: NodeJS.ProcessEnv;
    /** --workers: each turn's model calls and workspace tools run on a worker (docs/workers.md). */
    elsewhere?: TurnsElsewhere;
  };
  /** Where model answers come from. */
  answers: {
    call: CallModel;
    /** --model: this model for every agent. */
    modelOverride?: string;
    /** --batch: every agent's calls through the Message Batches API, as `batch: true`. */
    batchOverride?: boolean;
    /** --provider: this provider for every agent. */
    providerOverride?: ProviderName;
    /** Responses kept across runs (--cache): a hit costs nothing and calls no one. */
    cache?: ResponseCache;
    /** False for --replay and --offline: a model call nothing recorded or cached can answer fails the run instead of reaching the network. */
    live?: boolean;
    /** --spend-pool: ceilings shared with the organisation's other runs. */
    pools?: PoolsCeiling;
    /** The Message Batches API, for agents with `batch: true`. */
    batches?: BatchApi;
    /** The provider's free token counting, for the estimate before the run (undefined: its prompts are estimated from their length). */
    count?: (request: ModelRequest, provider: ProviderName, signal: AbortSignal) => Promise<number | undefined>;
  };
  /** Estimate the run before its first call even without --max-estimate-usd (the job summary shows it): estimate-gate.ts. */
  estimateFirst?: boolean;
  /** What the run re-executes first, and the limits it starts with. */
  recording: {
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
    /** Time the run had already used before it was resumed, for limits.timeout. */
    elapsedBeforeMs?: number;
    /** Secrets masked in a text as the session file writes it: what a resumed run rebuilt from its recording is checked against it. */
    mask?: (text: string) => string;
  };
  /** MCP servers: false for --replay (their tools come from the recording); what hides secrets in their answers. */
  servers?: { start?: boolean; mask?: (text: string) => string };
  progress: ProgressListener;
  /** --replay: the recording answers everything, and the workspace is left as it is (no document is written to its `write_to`). */
  replay?: boolean;
  /** --park: stop as `waiting` (exit 75) when nothing can go on until a message batch ends or a person votes. */
  park?: boolean;
  /** Whether the run's event is a stranger's, and the event's text, as the session header keeps them (docs/security.md: untrusted content). */
  trust?: RunTrust;
  event?: Record<string, string>;
  /** Votes from people (docs/workflow.md: votes from people): those a resume was given, checked with GitHub, and the head commit ballots are made against. */
  people?: { votes: readonly HumanVote[]; head?: string; run: string };
}

export interface RunResult extends Ending {
  outputs: Record<string, string>;
  /** Outputs whose values could not be evaluated, with where and why. */
  outputErrors: string[];
  usage: Spend;
  agents: Record<string, { turns: number; spend: Spend }>;
  proposals: ProposalView[];
  /** The documents as the run ended with them (docs/workflow.md: documents). */
  documents: Record<string, DocumentView>;
  /** What this process's live calls cost (a resume or replay pays nothing for what was recorded). */
  paidUsd: number;
  /** Answers the response cache gave (not in `usage`: they cost nothing). */
  cached: { calls: number; tokens: number };
  /** What the prompt cache read, wrote and saved over the run. */
  promptCache: PromptCacheUse;
  /** What batches answered and saved, and what still waits for one (a parked run): when the run has batched agents. */
  batches?: BatchUse;
  /** The prompt-cache misses the API diagnosed, by agent (docs/pricing.md: cache misses). */
  cacheMisses: readonly CacheMiss[];
  /** Calls that server-side fallbacks answered, by agent and answering model (docs/api-controls.md). */
  fallbacks: readonly FallbackAnswers[];
  /** The limits in force when the run ended. */
  limits: Limits;
  /** A run that waits for people: each proposal, the seats it waits for, and its ballot. */
  waitingFor?: { proposal: string; voters: string[]; ballot: Ballot }[];
}
