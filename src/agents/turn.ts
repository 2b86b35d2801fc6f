import { ConclaveError } from '../conclave-error.js';
import { MAX_INPUT_DEPTH, TOO_DEEP } from '../provider/input-depth.js';
import type { ContentBlockParam, MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { formatForAgent, type Message } from '../channel/message.js';
import type { ModelRequest, ModelResponse } from '../provider/client.js';
import { refusalDetails, type RefusalDetails } from '../provider/api-controls.js';
import { CallAborted, CallInterrupted, PromptTooLong } from '../provider/provider-errors.js';
import { keepWithin, type Compaction } from './compaction.js';
import { afterCall, CHARS_PER_TOKEN, fixedTokens, type Conversation } from './context.js';
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
  /** The turn's `call`-th model call: the engine checks limits, counts usage and records it. */
  call(request: ModelRequest, call: number): Promise<ModelResponse>;
  /** A tool call is about to run: the engine records it. */
  toolStarted(use: ToolUse): Promise<void>;
  /** Runs a tool that acts outside the run, or answers it from a recording. */
  external(use: ToolUse, readOnly: boolean, run: () => Promise<ToolResult>): Promise<ToolResult>;
  /** A tool call has its result: the engine records it (re-executing a recording, when the run reaches it). */
  toolFinished(use: ToolUse, result: ToolResult): Promise<void>;
  notice?(notice: TurnNotice): void;
  /** The conversation was compacted or its old tool results cleared: the engine records it. */
  compacted?(compaction: Compaction): void;
  /** `queue: steer`: the messages that arrived since, to add to call `step`. */
  steer?(step: number): Promise<readonly Message[]>;
}

export interface TurnOutcome {
  /** The final reply, to post to the channel (may be empty). */
  text: string;
  /** The agent's whole conversation after this turn, to keep for its next turn. */
  conversation: Conversation;
  steps: number;
  completion?: { status: 'success' | 'failure'; summary: string; outputs?: Record<string, unknown> };
  /** The model refused to answer (stop reason `refusal`): nothing is posted. What the refusal said of itself. */
  refused?: RefusalDetails;
}

/** A turn that cannot go on, in a sentence for the user (no stack trace). */
export class TurnError extends ConclaveError {}

/**
 * One turn of one agent (docs/design.md: turns, models): its system prompt, its own earlier turns, and one new
 * user message with the delivered messages; then the tool loop until the model ends its turn.
 * Each stop reason is handled: `tool_use` runs the tools; `max_tokens` continues the turn (a
 * tool call it cut is not run); `pause_turn` sends the paused answer back; `refusal` ends the
 * turn with nothing posted. Before each call the conversation is kept within the agent's
 * compact_at (docs/design.md: context); a "prompt is too long" refusal or `model_context_window_exceeded`
 * compacts it and makes the call again, once.
 */
export async function runTurn(
  profile: AgentProfile,
  history: Conversation,
  delivered: readonly Message[],
  status: string,
  context: Omit<ToolContext, 'complete'>,
  hooks: TurnHooks,
): Promise<TurnOutcome> {
  const opening: MessageParam[] = [...history.messages];
  pushUser(opening, [{ type: 'text', text: `${status}\n\n${delivered.map(formatForAgent).join('\n\n')}` }]);
  let current: Conversation = { ...history, messages: opening };
  let turnStart = opening.length - 1;
  let calls = 0;
  /** Tool output this turn has received, in characters, against its budget. */
  let output = 0;
  const outputBudget = profile.turnOutputBudget * CHARS_PER_TOKEN;
  let completion: TurnOutcome['completion'];
  const tools = new Map(profile.tools.map((t) => [t.definition.name, t]));
  /** The text of answers cut short by max_tokens, posted with the answer that finishes them. */
  const carried: string[] = [];
  let continuations = 0;

  /** Keeps the conversation within compact_at (or, forced, within what the API accepts), then calls the model. */
  const fitAndCall = async (force?: PromptTooLong): Promise<ModelResponse> => {
    // A system prompt that alone passes compact_at (a large `context:`) cannot be compacted: the
    // turns keep a quarter of compact_at above it, rather than a summary at every turn.
    const limit = force
      ? Math.min(profile.compactAt, Math.floor((force.maximumTokens ?? profile.compactAt) * 0.75))
      : Math.max(profile.compactAt, fixedTokens(profile) + Math.floor(profile.compactAt / 4));
    const fitted = await keepWithin(profile, current, turnStart, limit, force !== undefined, {
      summarise: (r) => hooks.call(r, ++calls),
      compacted: (c) => hooks.compacted?.(c),
    });
    if (force && !fitted.changed) {
      throw new TurnError(`the conversation no longer fits ${profile.model}'s context window, and nothing earlier is left to compact (${force.message})`);
    }
    current = fitted.conversation;
    turnStart = fitted.turnStart;
    return hooks.call(request(profile, current.messages), ++calls);
  };

  /** One call, made again once compacted when the API says the prompt is too long (whatever interrupts it, the caller's to handle). */
  const callWithin = async (): Promise<ModelResponse> => {
    try {
      const response = await fitAndCall();
      return response.stop_reason === 'model_context_window_exceeded'
        ? await fitAndCall(new PromptTooLong('stop reason model_context_window_exceeded'))
        : response;
    } catch (e) {
      const tooLong = PromptTooLong.of(e);
      if (!tooLong) throw e;
      return fitAndCall(tooLong);
    }
  };

  for (let step = 1; ; step++) {
    // queue: steer — what arrived since joins this call, after the tools that ran (never during one).
    const steered = step > 1 && hooks.steer ? await hooks.steer(step) : [];
    if (steered.length > 0) {
      const messages = [...current.messages];
      pushUser(messages, [{ type: 'text', text: steered.map(formatForAgent).join('\n\n') }]);
      current = { ...current, messages };
    }
    let response: ModelResponse;
    try {
      response = await callWithin();
    } catch (e) {
      if (!(e instanceof CallInterrupted)) throw e;
      // queue: interrupt — the next call carries what arrived; an abandoned call counts against the turn's calls too,
      // and past them the turn ends, leaving the message for the next turn.
      if (step >= MAX_TOOL_STEPS) return { text: [...carried].filter((t) => t !== '').join('\n'), conversation: current, steps: step, completion };
      continue;
    }
    const conversation = [...current.messages];
    const stop = response.stop_reason;
    const last = response.content.at(-1);
    const cutTool = stop === 'max_tokens' && last?.type === 'tool_use' ? last : undefined;
    const content = assistantContent(response, cutTool !== undefined);
    if (content.length > 0) conversation.push({ role: 'assistant', content });
    current = afterCall(conversation, response.usage);
    const text = response.content
      .flatMap((b) => (b.type === 'text' ? [b.text] : []))
      .join('\n')
      .trim();
    const reply = () => [...carried, text].filter((t) => t !== '').join('\n');

    if (stop === 'refusal') {
      hooks.notice?.({ kind: 'refused' });
      return { text: '', conversation: current, steps: step, completion, refused: refusalDetails(response) };
    }
    if (stop === 'model_context_window_exceeded') {
      throw new TurnError(`the conversation no longer fits ${profile.model}'s context window, even compacted (stop reason model_context_window_exceeded)`);
    }
    if (stop === 'pause_turn') {
      carried.push(text);
      hooks.notice?.({ kind: 'continued', reason: 'pause_turn' });
      if (step >= MAX_TOOL_STEPS) return { text: reply(), conversation: current, steps: step, completion };
      continue;
    }
    // Complete tool calls are run whatever the stop reason: none is left without its result.
    const uses = content.flatMap((b) => (b.type === 'tool_use' ? [b] : []));
    const cut = stop === 'max_tokens' && continuations < MAX_CONTINUATIONS && step < MAX_TOOL_STEPS;
    if (!cut && uses.length === 0) return { text: reply(), conversation: current, steps: step, completion };

    const results: ContentBlockParam[] = [];
    let since = Date.now();
    for (const use of uses) {
      // Many quick tools in one answer (a thousand writes, a dozen long diffs) still let a signal
      // or the run's timeout in between them, and stop there once the run stops.
      if (Date.now() - since >= YIELD_AFTER_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        since = Date.now();
      }
      if (context.signal.aborted) throw new CallAborted();
      results.push(await runTool(use, step));
    }
    if (cut) {
      continuations++;
      carried.push(text);
      if (cutTool) hooks.notice?.({ kind: 'cut_tool', tool: cutTool.name });
      hooks.notice?.({ kind: 'continued', reason: 'max_tokens' });
      results.push({ type: 'text', text: continuationNote(profile.maxTokens, cutTool?.name) });
    }
    pushUser(conversation, results);
    if (completion || step >= MAX_TOOL_STEPS || (!cut && stop !== 'tool_use')) return { text: reply(), conversation: current, steps: step, completion };
  }

  async function runTool(use: ToolUse, step: number): Promise<ToolResultBlockParam> {
    const tool = tools.get(use.name);
    let result: ToolResult;
    if (step >= MAX_TOOL_STEPS) {
      result = { content: `Not run: this turn reached its limit of ${MAX_TOOL_STEPS} model calls. Reply without tools.`, isError: true };
    } else if (typeof use.input === 'object' && use.input !== null && TOO_DEEP in use.input) {
      result = { content: `Not run: the input was nested deeper than ${MAX_INPUT_DEPTH} levels. Call ${use.name} again with a flatter input.`, isError: true };
    } else if (!tool) {
      const others = profile.offered?.some((t) => t.definition.name === use.name);
      const refused = others ? `You cannot use "${use.name}": it is another agent's tool.` : `There is no tool "${use.name}".`;
      result = { content: `${refused} Your tools: ${[...tools.keys()].join(', ')}.`, isError: true };
    } else if (tool.external && output >= outputBudget) {
      result = {
        content:
          `Not run: this turn's tool output budget (${profile.turnOutputBudget} tokens) is spent. Reply with what you have; your next turn has a new ` +
          `budget.`,
        isError: true,
      };
    } else {
      await hooks.toolStarted(use);
      const complete = (s: 'success' | 'failure', summary: string, outputs?: Record<string, unknown>) => (completion = { status: s, summary, outputs });
      const run = async () =>
        tool.run((use.input ?? {}) as Record<string, unknown>, { ...context, complete, forkPoint: { messages: current.messages, toolUseId: use.id } });
      result = tool.external ? await hooks.external(use, tool.readOnly, run) : await run();
      await hooks.toolFinished(use, result);
      if (tool.external) {
        result = withinBudget(result, outputBudget - output, profile.turnOutputBudget);
        output += result.content.length;
      }
    }
    return { type: 'tool_result', tool_use_id: use.id, content: result.content, ...(result.isError ? { is_error: true } : {}) };
  }
}

/** How long a turn's tools may run one after another before the event loop is let in (signals, timers). */
const YIELD_AFTER_MS = 50;

/** A tool's result cut to what is left of the turn's output budget (`room`, in characters). */
function withinBudget(result: ToolResult, room: number, budgetTokens: number): ToolResult {
  if (result.content.length <= room) return result;
  return {
    ...result,
    content:
      `${result.content.slice(0, Math.max(0, room))}\n[cut here: this turn's tool output budget (${budgetTokens} tokens) is spent; reply with what ` +
      `you have, and go on in your next turn]`,
  };
}

/** What the model is told when its answer was cut at max_tokens. */
function continuationNote(maxTokens: number, cutTool: string | undefined): string {
  const why = `[Your answer was cut off at the limit of ${maxTokens} output tokens.`;
  if (cutTool) return `${why} Your call of ${cutTool} was cut off too and was not run: make it again, with a shorter input if you can.]`;
  return `${why} Go on from where it stopped; what you wrote is kept and will be posted together with the rest.]`;
}
