import type { RecordedRequest } from './server.js';

/** The beta the cache diagnosis needs, as the API names it. */
export const CACHE_DIAGNOSIS_BETA = 'cache-diagnosis-2026-04-07';

/**
 * The API's cache diagnosis (beta), as the fake serves it: a request that names an earlier answer
 * (`diagnostics.previous_message_id`) is told why its prompt could not reuse that request's cached
 * prefix, by the first part that differs in prompt order (model, tools, system, messages), with
 * the tokens of that prefix it did not read. A request that read all of it is told nothing (null);
 * an id the fake never gave, `previous_message_not_found`.
 */
export function cacheMissReason(body: RecordedRequest['body'] & { model: string }, earlier: RecordedRequest | undefined, read: number): unknown {
  if (!earlier) return { type: 'previous_message_not_found' };
  const prefix = (earlier.cache?.read ?? 0) + (earlier.cache?.written ?? 0);
  const missed = prefix - read;
  if (missed <= 0) return null;
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const type =
    body.model !== earlier.body.model
      ? 'model_changed'
      : !same(body.tools, earlier.body.tools)
        ? 'tools_changed'
        : !same(body.system, earlier.body.system)
          ? 'system_changed'
          : 'messages_changed';
  return { type, cache_missed_input_tokens: missed };
}
