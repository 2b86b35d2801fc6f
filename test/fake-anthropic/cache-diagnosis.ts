import type { RecordedRequest } from './server.js';

/** Beta headers the API has retired or made needless (the features are generally available): a request that sends one is recorded as sending it. */
export const DEPRECATED_BETAS = ['cache-diagnosis-2026-04-07', 'token-counting-2024-11-01', 'message-batches-2024-09-24'];

/**
 * The API's cache diagnosis (generally available, no beta header), as the fake serves it: a request
 * that names an earlier answer (`diagnostics.previous_message_id`) is told the first part of its
 * prompt that differs from that request's in prompt order (model, tools, system), with that
 * request's cached prefix as the tokens missed: the comparison is of the requests' structure,
 * whether or not the cache hit (a prefix another request wrote may have been read all the same).
 * When model, tools and system are the same, the messages are judged by what the cache read: a
 * request that read all the earlier prefix is told nothing (null). An id the fake never gave:
 * `previous_message_not_found`.
 */
export function cacheMissReason(body: RecordedRequest['body'] & { model: string }, earlier: RecordedRequest | undefined, read: number): unknown {
  if (!earlier) return { type: 'previous_message_not_found' };
  const prefix = (earlier.cache?.read ?? 0) + (earlier.cache?.written ?? 0);
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const structure =
    body.model !== earlier.body.model
      ? 'model_changed'
      : (body.speed ?? 'standard') !== (earlier.body.speed ?? 'standard')
        ? 'speed_changed'
        : !same(body.tools, earlier.body.tools)
          ? 'tools_changed'
          : !same(body.system, earlier.body.system)
            ? 'system_changed'
            : undefined;
  if (structure) return prefix > 0 ? { type: structure, cache_missed_input_tokens: prefix } : null;
  const missed = prefix - read;
  return missed > 0 ? { type: 'messages_changed', cache_missed_input_tokens: missed } : null;
}
