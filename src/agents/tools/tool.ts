import type { Channel } from '../../channel/channel.js';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { SandboxPlan } from './sandbox.js';
import type { Workspace } from './workspace-root.js';

export interface ToolResult {
  content: string;
  isError?: boolean;
}

/** What one spawned agent may use of its own: turns, and dollars for it and every agent below it. */
export interface SpawnCaps {
  maxTurns?: number;
  budgetUsd?: number;
  /** The name of the one agent spawned, instead of TEMPLATE-N. */
  name?: string;
}

/** The conversation as it stands while a tool runs, and that tool call's id. */
export interface ForkPoint {
  messages: readonly MessageParam[];
  toolUseId: string;
}

/** Text the run keeps that a tool's result shows: channel messages by id, a document, or a proposal with its votes. */
export type Shown = { messages: readonly number[] } | { document: string } | { proposal: string };

export interface ToolContext {
  agent: string;
  channel: Channel;
  workspace: Workspace;
  /** Environment for run_command: the minimal tool environment (agents/tools/tool-env.ts). */
  env: NodeJS.ProcessEnv;
  /** How run_command is sandboxed. */
  sandbox?: SandboxPlan;
  signal: AbortSignal;
  /** Starts an instance of `template` per task, reporting to this agent; their names (docs/workflow.md: templates). */
  spawn?(template: string, tasks: readonly string[], caps?: SpawnCaps): string[];
  /** Forks this agent once per task at `point`, its conversation as it is now; the forks' names. */
  fork?(tasks: readonly string[], point: ForkPoint): string[];
  /** Where a fork made by the tool running now starts: the conversation up to this call. */
  forkPoint?: ForkPoint;
  /** Cancels an agent this one spawned (or below one), and everything below it; what to tell the model. */
  cancel?(agent: string): string;
  /** What the result shows of the run's own texts: whoever reads a stranger's words there is tainted (engine/trust/taints.ts). */
  shown?(what: Shown): void;
  /** The lead's `complete`: ends the run, with the values of its typed outputs. */
  complete(status: 'success' | 'failure', summary: string, outputs?: Record<string, unknown>): void;
}

/** A tool an agent can call: its definition for the Messages API, and what it does. */
export interface AgentTool {
  definition: { name: string; description: string; input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[] } };
  /** Re-running it cannot change anything; resume re-runs only such tools. */
  readOnly: boolean;
  /**
   * It acts outside the run (on the workspace), so a resumed run takes its recorded result
   * instead of running it again. Tools that act on the channel always run: their effect is
   * the run's own state, rebuilt by running them.
   */
  external: boolean;
  run(input: Record<string, unknown>, context: ToolContext): Promise<ToolResult> | ToolResult;
}

export { ToolInputError } from './tool-error.js';
