import type { ContentBlockParam, MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { formatForAgent, type Message } from '../channel/message.js';
import type { ModelRequest, ModelResponse } from '../provider/client.js';
import type { AgentProfile } from './profile.js';
import { assistantContent, pushUser, request } from './request.js';
import type { ToolContext, ToolResult } from './tools/tool.js';

/** The most model calls one turn may make; the tool loop stops there. */
export const MAX_TOOL_STEPS = 25;

/** How many times a turn cut short by max_tokens is continued before its reply is posted as it stands. */
export const MAX_CONTINUATIONS = 3;

export interface ToolUse {
  id: string;
  name: string;
  input: unknown;
}

/** Why a turn goes on or ends other than by a finished reply, for whoever shows the run. */
export type TurnNotice = { kind: 'continued'; reason: 'max_tokens' | 'pause_turn' } | { kind: 'refused' } | { kind: 'cut_tool'; tool: string };

export interface TurnHooks {
  /** One model call: the engine checks limits, counts usage and records it. */
  call(request: ModelRequest, step: number): Promise<ModelResponse>;
  /** A tool call is about to run: the engine records it. */
  toolStarted(use: ToolUse): Promise<void>;
  /** Runs a tool that acts outside the run, or answers it from a recording. */
  external(use: ToolUse, readOnly: boolean, run: () => Promise<ToolResult>): Promise<ToolResult>;
  toolFinished(use: ToolUse, result: ToolResult): void;
  notice?(notice: TurnNotice): void;
}

export interface TurnOutcome {
  /** The final reply, to post to the channel (may be empty). */
  text: string;
  /** The agent's whole conversation after this turn, to keep for its next turn. */
  conversation: MessageParam[];
  steps: number;
  completion?: { status: 'success' | 'failure'; summary: string };
  /** The model refused to answer (stop reason `refusal`): nothing is posted. */
  refused?: boolean;
}

/** A turn that cannot go on, in a sentence for the user (no stack trace). */
export class TurnError extends Error {}

/**
 * One turn of one agent (DESIGN §3, §14): its system prompt, its own earlier turns, and one new
 * user message with the delivered messages; then the tool loop until the model ends its turn.
 * Each stop reason is handled: `tool_use` runs the tools; `max_tokens` continues the turn (a
 * tool call it cut is not run); `pause_turn` sends the paused answer back; `refusal` ends the
 * turn with nothing posted; `model_context_window_exceeded` fails it.
 */
export async function runTurn(
  profile: AgentProfile,
  history: readonly MessageParam[],
  delivered: readonly Message[],
  status: string,
  context: Omit<ToolContext, 'complete'>,
  hooks: TurnHooks,
): Promise<TurnOutcome> {
  const conversation: MessageParam[] = [...history];
  pushUser(conversation, [{ type: 'text', text: `${status}\n\n${delivered.map(formatForAgent).join('\n\n')}` }]);
  let completion: TurnOutcome['completion'];
  const tools = new Map(profile.tools.map((t) => [t.definition.name, t]));
  /** The text of answers cut short by max_tokens, posted with the answer that finishes them. */
  const carried: string[] = [];
  let continuations = 0;

  for (let step = 1; ; step++) {
    const response = await hooks.call(request(profile, conversation), step);
    const stop = response.stop_reason;
    const last = response.content.at(-1);
    const cutTool = stop === 'max_tokens' && last?.type === 'tool_use' ? last : undefined;
    const content = assistantContent(response, cutTool !== undefined);
    if (content.length > 0) conversation.push({ role: 'assistant', content });
    const text = response.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n').trim();
    const reply = () => [...carried, text].filter((t) => t !== '').join('\n');

    if (stop === 'refusal') {
      hooks.notice?.({ kind: 'refused' });
      return { text: '', conversation, steps: step, completion, refused: true };
    }
    if (stop === 'model_context_window_exceeded') {
      throw new TurnError(`the conversation no longer fits ${profile.model}'s context window (stop reason model_context_window_exceeded)`);
    }
    if (stop === 'pause_turn') {
      carried.push(text);
      hooks.notice?.({ kind: 'continued', reason: 'pause_turn' });
      if (step >= MAX_TOOL_STEPS) return { text: reply(), conversation, steps: step, completion };
      continue;
    }
    // Complete tool calls are run whatever the stop reason: none is left without its result.
    const uses = content.flatMap((b) => (b.type === 'tool_use' ? [b as unknown as ToolUse] : []));
    const cut = stop === 'max_tokens' && continuations < MAX_CONTINUATIONS && step < MAX_TOOL_STEPS;
    if (!cut && uses.length === 0) return { text: reply(), conversation, steps: step, completion };

    const results: ContentBlockParam[] = [];
    for (const use of uses) results.push(await runTool(use, step));
    if (cut) {
      continuations++;
      carried.push(text);
      if (cutTool) hooks.notice?.({ kind: 'cut_tool', tool: cutTool.name });
      hooks.notice?.({ kind: 'continued', reason: 'max_tokens' });
      results.push({ type: 'text', text: continuationNote(profile.maxTokens, cutTool?.name) });
    }
    pushUser(conversation, results);
    if (completion || step >= MAX_TOOL_STEPS || (!cut && stop !== 'tool_use')) return { text: reply(), conversation, steps: step, completion };
  }

  async function runTool(use: ToolUse, step: number): Promise<ToolResultBlockParam> {
    const tool = tools.get(use.name);
    let result: ToolResult;
    if (step >= MAX_TOOL_STEPS) {
      result = { content: `Not run: this turn reached its limit of ${MAX_TOOL_STEPS} model calls. Reply without tools.`, isError: true };
    } else if (!tool) {
      result = { content: `There is no tool "${use.name}". Your tools: ${[...tools.keys()].join(', ')}.`, isError: true };
    } else {
      await hooks.toolStarted(use);
      const complete = (s: 'success' | 'failure', summary: string) => (completion = { status: s, summary });
      const run = async () => tool.run((use.input ?? {}) as Record<string, unknown>, { ...context, complete });
      result = tool.external ? await hooks.external(use, tool.readOnly, run) : await run();
      hooks.toolFinished(use, result);
    }
    return { type: 'tool_result', tool_use_id: use.id, content: result.content, ...(result.isError ? { is_error: true } : {}) };
  }
}

/** What the model is told when its answer was cut at max_tokens. */
function continuationNote(maxTokens: number, cutTool: string | undefined): string {
  const why = `[Your answer was cut off at the limit of ${maxTokens} output tokens.`;
  if (cutTool) return `${why} Your call of ${cutTool} was cut off too and was not run: make it again, with a shorter input if you can.]`;
  return `${why} Go on from where it stopped; what you wrote is kept and will be posted together with the rest.]`;
}
