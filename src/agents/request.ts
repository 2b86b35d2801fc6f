import type { CacheControlEphemeral, ContentBlockParam, MessageParam, TextBlockParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import type { CacheTtl } from '../workflow/types.js';
import type { ModelRequest, ModelResponse } from '../provider/client.js';
import { type AgentProfile, sentTools } from './profile.js';

const systemParts = new WeakMap<AgentProfile, TextBlockParam[]>();

/** The tools as sent, one array per distinct list of tool definitions: agents with the same tools share it. */
interface ToolsNode {
  next: WeakMap<object, ToolsNode>;
  tools?: Map<CacheTtl, Tool[]>;
}
const toolsRoot: ToolsNode = { next: new WeakMap() };

/** The workflow's context as a block: one object for every agent, by ttl. */
const contextBlocks = new Map<CacheTtl, Map<string, TextBlockParam>>();

/** A cache breakpoint: the prompt cache keeps the prefix that ends at this block (docs/workflow.md: sharing the prompt cache). */
function breakpoint(ttl: CacheTtl): { cache_control: CacheControlEphemeral } {
  return { cache_control: ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' } };
}

/**
 * An agent's system blocks and tools, built once: every request of the agent shares the same
 * objects, which lets hashing and recording tell at once that they did not change. The tools are
 * also the same objects for every agent that has the same tools (the instances of a template),
 * so a wide spawn hashes and measures them once, not once per agent; and so is the context block.
 * Breakpoints: the end of the tools, the context, the end of the system prompt (and the last
 * message): four, the most a request may have.
 */
function partsOf(profile: AgentProfile): { system: TextBlockParam[]; tools: Tool[] } {
  const ttl = profile.cacheTtl;
  let system = systemParts.get(profile);
  if (!system) {
    const last = profile.system.length - 1;
    system = profile.system.map((text, i) => (i === last ? { type: 'text' as const, text, ...breakpoint(ttl) } : { type: 'text' as const, text }));
    if (last > 0) {
      const blocks = contextBlocks.get(ttl) ?? contextBlocks.set(ttl, new Map()).get(ttl)!;
      const context = profile.system[0]!;
      system[0] = blocks.get(context) ?? blocks.set(context, { type: 'text', text: context, ...breakpoint(ttl) }).get(context)!;
    }
    systemParts.set(profile, system);
  }
  const sent = sentTools(profile);
  let node = toolsRoot;
  for (const tool of sent) {
    let next = node.next.get(tool.definition);
    if (!next) node.next.set(tool.definition, (next = { next: new WeakMap() }));
    node = next;
  }
  const byTtl = (node.tools ??= new Map());
  let tools = byTtl.get(ttl);
  if (!tools) {
    tools = sent.map((t, i) => ({ ...t.definition, ...(i === sent.length - 1 ? breakpoint(ttl) : {}) }));
    byTtl.set(ttl, tools);
  }
  return { system, tools };
}

/** The request for one model call, with prompt-cache breakpoints on the system prompt, the tools and the conversation so far. */
export function request(profile: AgentProfile, messages: readonly MessageParam[]): ModelRequest {
  const { system, tools } = partsOf(profile);
  return {
    model: profile.model,
    max_tokens: profile.maxTokens,
    ...(profile.thinking ? { thinking: profile.thinking } : {}),
    ...(profile.effort ? { output_config: { effort: profile.effort } } : {}),
    // As the API takes them: `default`, or one object per model.
    ...(profile.fallbacks ? { fallbacks: profile.fallbacks === 'default' ? 'default' : profile.fallbacks.map((model) => ({ model })) } : {}),
    ...(profile.speed ? { speed: profile.speed } : {}),
    system,
    tools,
    messages: withCacheBreakpoint(messages, profile.cacheTtl),
  };
}

/** A copy whose last content block carries a cache breakpoint, so the next call reads this prefix from the cache. */
function withCacheBreakpoint(messages: readonly MessageParam[], ttl: CacheTtl): MessageParam[] {
  const copy = [...messages];
  const last = copy[copy.length - 1];
  if (!last || typeof last.content === 'string' || last.content.length === 0) return copy;
  const blocks = [...last.content];
  const index = blocks.findLastIndex((b) => b.type !== 'thinking' && b.type !== 'redacted_thinking');
  if (index === -1) return copy; // thinking blocks are sent back exactly as they came
  blocks[index] = { ...blocks[index]!, ...breakpoint(ttl) } as ContentBlockParam;
  copy[copy.length - 1] = { ...last, content: blocks } as MessageParam;
  return copy;
}

/**
 * Adds a user message; when the conversation already ends with one (a turn that stopped at its
 * tool-step limit ends with tool results), the content joins it, as the API wants roles to alternate.
 */
export function pushUser(conversation: MessageParam[], content: ContentBlockParam[]): void {
  const last = conversation[conversation.length - 1];
  if (last?.role === 'user' && Array.isArray(last.content)) {
    conversation[conversation.length - 1] = { role: 'user', content: [...(last.content as ContentBlockParam[]), ...content] };
  } else {
    conversation.push({ role: 'user', content });
  }
}

/**
 * A response's blocks as the conversation keeps them: every block verbatim — thinking with its
 * signature, redacted thinking, and block types added later — but empty text, which the API
 * refuses, and a tool call cut short by max_tokens, which must not be sent back or run.
 */
export function assistantContent(response: ModelResponse, dropLast: boolean): ContentBlockParam[] {
  const blocks = dropLast ? response.content.slice(0, -1) : response.content;
  return blocks.filter((b) => !(b.type === 'text' && b.text === ''));
}
