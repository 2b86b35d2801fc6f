import type { ToolUse, TurnHooks } from '../agents/turn.js';
import type { ProgressListener } from './progress-events.js';
import type { Journal } from './journal.js';

type ToolHooks = Pick<TurnHooks, 'toolStarted' | 'external' | 'toolFinished'>;

/**
 * Tool calls as the session keeps them: each recorded as it starts and when it has its result.
 * A tool that acts outside the run is answered from the recording when it has the result; one
 * that was interrupted is run again only if it only reads (docs/design.md: the session file).
 */
export function toolHooks(journal: Journal, agent: string, turn: number, signal: AbortSignal, progress: ProgressListener): ToolHooks {
  return {
    toolStarted: async (use: ToolUse) => {
      if (!journal.hasToolCall(agent, turn, use.id)) await journal.live(signal);
      journal.append({ type: 'tool_call', agent, turn, tool: use.name, tool_use_id: use.id, input: use.input });
      progress({ type: 'tool', agent, tool: use.name });
    },
    external: async (use, readOnly, run) => {
      const recorded = journal.toolResult(agent, turn, use.id, signal);
      if (recorded) {
        const event = await recorded;
        return { content: event.content, isError: event.is_error };
      }
      const interrupted = journal.hasToolCall(agent, turn, use.id);
      await journal.live(signal);
      if (interrupted && !readOnly) {
        return {
          content: `The outcome of this ${use.name} call is unknown: conclave was stopped while it ran, and it was not run again because it may have changed something. Check its effect before you repeat it.`,
          isError: true,
        };
      }
      return run();
    },
    toolFinished: (use, result) =>
      journal.append({ type: 'tool_result', agent, turn, tool: use.name, tool_use_id: use.id, content: result.content, is_error: result.isError ?? false }),
  };
}
