import type { ToolUse, TurnHooks } from '../agents/turn.js';
import type { ToolResult } from '../agents/tools/tool.js';
import { isWorkspaceTool } from '../workflow/types.js';
import type { TurnElsewhere } from './run-options.js';
import type { ProgressListener } from './progress-events.js';
import type { Journal } from './replay/journal.js';

type ToolHooks = Pick<TurnHooks, 'toolStarted' | 'external' | 'toolFinished'>;

/**
 * Tool calls as the session keeps them: each recorded as it starts and when it has its result.
 * A tool that acts outside the run is answered from the recording when it has the result; one
 * that was interrupted is run again only if it only reads (docs/design.md: the session file).
 * `elsewhere`: the turn runs on a worker, where its workspace tools run.
 */
export function toolHooks(
  journal: Journal,
  agent: string,
  turn: number,
  signal: AbortSignal,
  progress: ProgressListener,
  elsewhere?: TurnElsewhere,
  guard?: { refusal(use: ToolUse, readOnly: boolean): string | undefined; read(tool: string): void },
): ToolHooks {
  /** While the run re-executes its recording: until the recording's next event of this agent's is next. */
  const inOrder = async () => {
    await journal.continueAfter(agent, signal);
  };
  const externalResult = async (use: ToolUse, readOnly: boolean, run: () => Promise<ToolResult>): Promise<ToolResult> => {
    const recorded = journal.toolResult(agent, turn, use.id, signal);
    if (recorded !== undefined) {
      const event = await recorded;
      return { content: event.content, isError: event.is_error };
    }
    const interrupted = journal.recorded.hasToolCall(agent, turn, use.id);
    await journal.live(signal);
    if (interrupted && !readOnly) return outcomeUnknown(use.name, 'conclave was stopped while it ran');
    // With --workers, the workspace tools run on the worker that holds the turn (docs/workers.md).
    return elsewhere && isWorkspaceTool(use.name) ? elsewhere.tool(use, readOnly, signal) : run();
  };
  return {
    toolStarted: async (use: ToolUse) => {
      if (!journal.recorded.hasToolCall(agent, turn, use.id)) await journal.live(signal);
      // Re-executed, a tool's events wait for the other agents' events the recorded run wrote before them: in the
      // recorded run a tool may have waited on I/O, or yielded between quick tools, while they came in (inOrder).
      else await inOrder();
      journal.append({ type: 'tool_call', agent, turn, tool: use.name, tool_use_id: use.id, input: use.input });
      progress({ type: 'tool', agent, tool: use.name });
    },
    external: async (use, readOnly, run) => {
      // A tainted agent's write goes through only with consent (engine/trust/taints.ts): decided the same way when re-executed.
      const refused = guard?.refusal(use, readOnly);
      if (refused !== undefined) return { content: refused, isError: true };
      const result = await externalResult(use, readOnly, run);
      guard?.read(use.name);
      return result;
    },
    toolFinished: async (use, result) => {
      await inOrder();
      journal.append({ type: 'tool_result', agent, turn, tool: use.name, tool_use_id: use.id, content: result.content, is_error: result.isError ?? false });
    },
  };
}

/** The result of a tool call that may have changed something and was stopped before it answered: it is not run again. */
export function outcomeUnknown(tool: string, why: string): ToolResult {
  return {
    content:
      `The outcome of this ${tool} call is unknown: ${why}, and it was not run again because it may have changed something. Check its effect before ` +
      `you repeat it.`,
    isError: true,
  };
}
