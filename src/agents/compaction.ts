import type { ContentBlockParam, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { ModelRequest, ModelResponse } from '../provider/client.js';
import { charTokens, clearOldToolResults, fixedTokens, tokensOf, type Conversation } from './context.js';
import type { AgentProfile } from './profile.js';
import { request } from './request.js';

/** What keeping a conversation within its threshold did, for the session and whoever shows the run. */
export interface Compaction {
  /** `threshold`: the next request would have passed compact_at; `too_long`: the API refused it as too long. */
  reason: 'threshold' | 'too_long';
  tokensBefore: number;
  tokensAfter: number;
  /** Tool results whose content was cleared. */
  cleared: number;
  /** The agent's summary of its earlier turns, when they were summarised. */
  summary: string | null;
  /** Earlier turns too long to be given to the summary call. */
  leftOut: number;
  /** Who wrote the summary: the API's compaction request, or conclave's own summary call (a provider without it). */
  by?: 'api' | 'conclave';
}

export interface CompactionHooks {
  /** The summary call: a model call like any other (recorded, cached, counted against the budget). */
  summarise(request: ModelRequest): Promise<ModelResponse>;
  compacted(compaction: Compaction): void;
}

export const SUMMARY_PROMPT =
  '[conclave: your conversation is close to the limit of your context window, so it will be compacted. Write a summary of your work so far, for yourself: ' +
  'your task, what you did and found, what was decided, what you still have to do, and the details you will need (names, paths, numbers, open questions). ' +
  'The summary replaces the earlier conversation; the messages of the channel stay readable with channel_history. Answer with the summary only.]';

/**
 * Keeps an agent's conversation under `limit` tokens (docs/design.md: context). First the content of old
 * tool results is cleared (the newest kept); if that is not enough, the turns before the
 * current one (which starts at `turnStart`) are summarised by the agent in one model call, and
 * the conversation goes on from that summary and the current turn. With `force` (the API said
 * the prompt is too long), both are done whatever the estimate says.
 */
export async function keepWithin(
  profile: AgentProfile,
  conversation: Conversation,
  turnStart: number,
  limit: number,
  force: boolean,
  hooks: CompactionHooks,
): Promise<{ conversation: Conversation; turnStart: number; changed: boolean }> {
  const before = tokensOf(profile, conversation);
  if (!force && before <= limit) return { conversation, turnStart, changed: false };
  const { messages: cleared, cleared: clearedCount } = clearOldToolResults(conversation.messages);
  let next: Conversation = { messages: cleared };
  let start = turnStart;
  let summary: string | null = null;
  let leftOut = 0;
  let by: Compaction['by'];
  if ((force || tokensOf(profile, next) > limit) && turnStart > 0) {
    const done = await summarise(profile, cleared, turnStart, limit, hooks);
    summary = done.summary;
    leftOut = done.leftOut;
    by = done.by;
    next = { messages: done.messages };
    start = 0;
  }
  if (clearedCount === 0 && summary === null) return { conversation, turnStart, changed: false };
  hooks.compacted({
    reason: force ? 'too_long' : 'threshold',
    tokensBefore: before,
    tokensAfter: tokensOf(profile, next),
    cleared: clearedCount,
    summary,
    leftOut,
    ...(by ? { by } : {}),
  });
  return { conversation: next, turnStart: start, changed: true };
}

async function summarise(
  profile: AgentProfile,
  messages: readonly MessageParam[],
  turnStart: number,
  limit: number,
  hooks: CompactionHooks,
): Promise<{ messages: MessageParam[]; summary: string; leftOut: number; by?: Compaction['by'] }> {
  const earlier = messages.slice(0, turnStart);
  // Where the earlier part may be cut: after an answer that called no tool, so that no call is left without its result.
  const ends = earlier.flatMap((m, i) => (m.role === 'assistant' && !hasToolUse(m) ? [i + 1] : []));
  const fixed = fixedTokens(profile) + charTokens(SUMMARY_PROMPT) + profile.maxTokens;
  // The oldest turns first, as many as fit: the summary call itself never fails for length.
  const end = ends.findLast((e) => fixed + charTokens(earlier.slice(0, e)) <= limit) ?? 0;
  const leftOut = ends.filter((e) => e > end).length;
  let summary = '(Your earlier turns were too long to summarise: read the channel with channel_history for what was said.)';
  let by: Compaction['by'];
  if (end > 0) {
    // Anthropic's API compacts on request (docs/api-controls.md): one call that answers with a compaction block.
    // Elsewhere the agent is asked for the summary in a call of its own.
    by = profile.provider === 'anthropic' ? 'api' : 'conclave';
    const made =
      by === 'api'
        ? ({ ...request(profile, earlier.slice(0, end)), compaction: { type: 'summarize', instructions: SUMMARY_PROMPT } } as ModelRequest)
        : {
            ...request(profile, [...earlier.slice(0, end), { role: 'user' as const, content: [{ type: 'text' as const, text: SUMMARY_PROMPT }] }]),
            tool_choice: { type: 'none' as const },
          };
    const text = summaryText(await hooks.summarise(made));
    if (text !== '') summary = text;
  }
  const note =
    leftOut > 0
      ? `\n\n(${leftOut} later turn${leftOut === 1 ? ' was' : 's were'} too long to include in this summary; channel_history shows the channel's messages.)`
      : '';
  const [first, ...rest] = messages.slice(turnStart);
  // The current turn's first message may carry results of calls made before it: their calls are summarised away.
  const kept = (first!.content as ContentBlockParam[]).filter((b) => b.type !== 'tool_result');
  const opening: MessageParam = {
    role: 'user',
    content: [
      { type: 'text', text: `[A summary of your work before this turn, written by you when your conversation was compacted]\n\n${summary}${note}` },
      ...kept,
    ],
  };
  return { messages: [opening, ...rest], summary, leftOut, ...(by ? { by } : {}) };
}

/** The summary an answer holds: a compaction block's content (the API's compaction request), or its text. */
function summaryText(response: ModelResponse): string {
  return response.content
    .flatMap((b) => {
      if (b.type === 'text') return [b.text];
      const block = b as { type: string; content?: unknown };
      return block.type === 'compaction' && typeof block.content === 'string' ? [block.content] : [];
    })
    .join('\n')
    .trim();
}

function hasToolUse(message: MessageParam): boolean {
  return Array.isArray(message.content) && message.content.some((b) => b.type === 'tool_use');
}
