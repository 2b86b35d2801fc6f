import type {
  ContentBlockParam,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { formatForAgent, type Message } from '../channel/message.js';
import type { ModelRequest, ModelResponse } from '../provider/client.js';
import type { AgentProfile } from './profile.js';
import type { ToolContext, ToolResult } from './tools/tool.js';

/** The most model calls one turn may make; the tool loop stops there. */
export const MAX_TOOL_STEPS = 25;

export interface ToolUse {
  id: string;
  name: string;
  input: unknown;
}

export interface TurnHooks {
  /** One model call: the engine checks limits, counts usage and records it. */
  call(request: ModelRequest, step: number): Promise<ModelResponse>;
  /** A tool call is about to run: the engine records it. */
  toolStarted(use: ToolUse): Promise<void>;
  /** Runs a tool that acts outside the run, or answers it from a recording. */
  external(use: ToolUse, readOnly: boolean, run: () => Promise<ToolResult>): Promise<ToolResult>;
  toolFinished(use: ToolUse, result: ToolResult): void;
}

export interface TurnOutcome {
  /** The final reply, to post to the channel (may be empty). */
  text: string;
  /** The agent's whole conversation after this turn, to keep for its next turn. */
  conversation: MessageParam[];
  steps: number;
  completion?: { status: 'success' | 'failure'; summary: string };
}

/**
 * One turn of one agent (DESIGN §3): its system prompt, its own earlier turns, and one new user
 * message with the delivered messages; then the tool loop until the model ends its turn.
 */
export async function runTurn(
  profile: AgentProfile,
  history: readonly MessageParam[],
  delivered: readonly Message[],
  status: string,
  context: Omit<ToolContext, 'complete'>,
  hooks: TurnHooks,
): Promise<TurnOutcome> {
  const text = `${status}\n\n${delivered.map(formatForAgent).join('\n\n')}`;
  const conversation: MessageParam[] = [...history];
  pushUser(conversation, [{ type: 'text', text }]);
  let completion: TurnOutcome['completion'];
  const tools = new Map(profile.tools.map((t) => [t.definition.name, t]));

  for (let step = 1; ; step++) {
    const response = await hooks.call(request(profile, conversation), step);
    conversation.push({ role: 'assistant', content: response.content.flatMap(asParam) });
    const reply = response.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n').trim();
    const uses = response.content.flatMap((b) => (b.type === 'tool_use' ? [b] : []));
    if (response.stop_reason !== 'tool_use' || uses.length === 0) return { text: reply, conversation, steps: step, completion };

    const results: ToolResultBlockParam[] = [];
    for (const use of uses) {
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
      results.push({ type: 'tool_result', tool_use_id: use.id, content: result.content, ...(result.isError ? { is_error: true } : {}) });
    }
    conversation.push({ role: 'user', content: results });
    if (completion || step >= MAX_TOOL_STEPS) return { text: reply, conversation, steps: step, completion };
  }
}

const fixedParts = new WeakMap<AgentProfile, { system: TextBlockParam[]; tools: Tool[] }>();

/**
 * An agent's system blocks and tools, built once: every request of the agent shares the same
 * objects, which lets hashing and recording tell at once that they did not change.
 */
function partsOf(profile: AgentProfile): { system: TextBlockParam[]; tools: Tool[] } {
  let parts = fixedParts.get(profile);
  if (!parts) {
    parts = {
      system: [{ type: 'text', text: profile.system, cache_control: { type: 'ephemeral' } }],
      tools: profile.tools.map((t, i) => ({
        ...t.definition,
        ...(i === profile.tools.length - 1 ? { cache_control: { type: 'ephemeral' as const } } : {}),
      })),
    };
    fixedParts.set(profile, parts);
  }
  return parts;
}

/** The request for one model call, with prompt-cache breakpoints on the system prompt, the tools and the conversation so far. */
export function request(profile: AgentProfile, messages: readonly MessageParam[]): ModelRequest {
  const { system, tools } = partsOf(profile);
  return {
    model: profile.model,
    max_tokens: profile.maxTokens,
    system,
    tools,
    messages: withCacheBreakpoint(messages),
  };
}

/** A copy whose last content block carries a cache breakpoint, so the next call reads this prefix from the cache. */
function withCacheBreakpoint(messages: readonly MessageParam[]): MessageParam[] {
  const copy = [...messages];
  const last = copy[copy.length - 1];
  if (!last || typeof last.content === 'string' || last.content.length === 0) return copy;
  const blocks = [...last.content];
  blocks[blocks.length - 1] = { ...blocks[blocks.length - 1]!, cache_control: { type: 'ephemeral' } } as ContentBlockParam;
  copy[copy.length - 1] = { ...last, content: blocks } as MessageParam;
  return copy;
}

/**
 * Adds a user message; when the conversation already ends with one (a turn that stopped at its
 * tool-step limit ends with tool results), the text joins it, as the API wants roles to alternate.
 */
function pushUser(conversation: MessageParam[], content: TextBlockParam[]): void {
  const last = conversation[conversation.length - 1];
  if (last?.role === 'user' && Array.isArray(last.content)) {
    conversation[conversation.length - 1] = { role: 'user', content: [...(last.content as ContentBlockParam[]), ...content] };
  } else {
    conversation.push({ role: 'user', content });
  }
}

function asParam(block: ModelResponse['content'][number]): ContentBlockParam[] {
  if (block.type === 'text') return block.text === '' ? [] : [{ type: 'text', text: block.text }];
  if (block.type === 'tool_use') return [{ type: 'tool_use', id: block.id, name: block.name, input: block.input }];
  if (block.type === 'thinking') return [{ type: 'thinking', thinking: block.thinking, signature: block.signature }];
  return [];
}
