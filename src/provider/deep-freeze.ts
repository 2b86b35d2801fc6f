/**
 * Freezes `value` and everything it holds, so that a later change in place throws instead of
 * going unseen. Parts of a request are shared by identity (a conversation's messages are reused
 * call after call): their hashes are cached per object and the session's request delta compares
 * them with `===`, so a message changed in place would serve a stale hash and a wrong delta.
 * A part already frozen is taken as frozen throughout, so each message is walked once.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return value;
}
