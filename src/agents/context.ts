import type { ContentBlockParam, MessageParam, Usage } from '@anthropic-ai/sdk/resources/messages';
import { type AgentProfile, sentTools } from './profile.js';
import type { AgentTool } from './tools/tool.js';

/**
 * Characters per token, to measure what the API has not counted yet. English prose runs near 4,
 * code and JSON nearer 3: the threshold's margin (a quarter of the window by default) absorbs it,
 * and a "prompt is too long" refusal is answered by compacting all the same.
 */
export const CHARS_PER_TOKEN = 4;

/** How many of the newest tool results keep their content when older ones are cleared. */
export const KEPT_TOOL_RESULTS = 3;

/** One agent's conversation, and what the API last said of its size. */
export interface Conversation {
  messages: readonly MessageParam[];
  /** The last call's prompt tokens plus its answer's, as the API counted them, and how many messages those cover. */
  counted?: { tokens: number; messages: number };
}

/** A new, empty conversation: each agent owns its own (a turn extends it in place). */
export const emptyConversation = (): Conversation => ({ messages: [] });

/** The conversation after a call: its answer added, and the size the API counted. */
export function afterCall(messages: readonly MessageParam[], usage: Partial<Usage> | undefined): Conversation {
  if (!usage) return { messages };
  const tokens = (usage.input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.output_tokens ?? 0);
  return { messages, counted: { tokens, messages: messages.length } };
}

/** How many tokens the next request of the agent holds, at most about: the counted part plus what was added since. */
export function tokensOf(profile: AgentProfile, conversation: Conversation): number {
  const { counted } = conversation;
  if (counted && counted.messages <= conversation.messages.length) {
    return counted.tokens + charTokens(conversation.messages.slice(counted.messages));
  }
  return fixedTokens(profile) + charTokens(conversation.messages);
}

const fixed = new WeakMap<AgentProfile, number>();

/** The tokens of an agent's system prompt and tools, which never change: measured once. */
export function fixedTokens(profile: AgentProfile): number {
  let tokens = fixed.get(profile);
  if (tokens === undefined) {
    tokens = profile.system.reduce((sum, block) => sum + charTokens(block), 0) + toolsTokens(sentTools(profile));
    fixed.set(profile, tokens);
  }
  return tokens;
}

const definitionLength = new WeakMap<object, number>();

/**
 * charTokens of the tools' definitions as one list, without writing the list out again for each
 * agent: the team's tools are the same objects in every agent's list (a spawn of 256 wrote them
 * 256 times), so each definition's JSON length is measured once, and the list's is theirs plus
 * its brackets and commas.
 */
export function toolsTokens(tools: readonly AgentTool[]): number {
  let length = 2 + Math.max(0, tools.length - 1);
  for (const { definition } of tools) {
    let known = definitionLength.get(definition);
    if (known === undefined) definitionLength.set(definition, (known = JSON.stringify(definition).length));
    length += known;
  }
  return Math.ceil(length / CHARS_PER_TOKEN);
}

export function charTokens(value: unknown): number {
  return Math.ceil((typeof value === 'string' ? value : JSON.stringify(value)).length / CHARS_PER_TOKEN);
}

/**
 * The messages with the content of every tool result but the newest `keep` replaced by a
 * one-line note of what was there. Messages that change are new objects; the rest are shared.
 */
export function clearOldToolResults(messages: readonly MessageParam[], keep = KEPT_TOOL_RESULTS): { messages: MessageParam[]; cleared: number } {
  const positions: [number, number][] = [];
  messages.forEach((m, i) => {
    if (m.role === 'user' && Array.isArray(m.content)) m.content.forEach((b, j) => b.type === 'tool_result' && !isCleared(b.content) && positions.push([i, j]));
  });
  const clear = positions.slice(0, Math.max(0, positions.length - keep));
  if (clear.length === 0) return { messages: [...messages], cleared: 0 };
  const copy = [...messages];
  for (const [i, j] of clear) {
    const message = copy[i]!;
    const blocks = [...(message.content as ContentBlockParam[])];
    const block = blocks[j] as Extract<ContentBlockParam, { type: 'tool_result' }>;
    const size = typeof block.content === 'string' ? block.content.length : JSON.stringify(block.content ?? '').length;
    blocks[j] = { ...block, content: `${CLEARED} (${size} characters of output; call the tool again if you need it)` };
    copy[i] = { ...message, content: blocks } as MessageParam;
  }
  return { messages: copy, cleared: clear.length };
}

const CLEARED = '[cleared to keep the conversation within its context window]';

function isCleared(content: unknown): boolean {
  return typeof content === 'string' && content.startsWith(CLEARED);
}
