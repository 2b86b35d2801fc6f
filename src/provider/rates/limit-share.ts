/**
 * How a limiter hands out a limit as the server keeps it (docs/organisation.md: pacing), the same
 * in this process and in PostgreSQL (Redis runs the same steps as a script: store-limits.ts).
 * A token bucket holds `points` and refills them continuously over `ms`, as the Messages API's
 * does; a window (fixed or sliding) lets at most `points` go in any `ms`, each point coming back
 * `ms` after it went. What goes is counted to the millisecond of the keeper's clock: nothing is
 * rounded to whole seconds or halved between runners.
 */

/** A limit's size and shape, as given or learned. */
export interface LimitSize {
  points: number;
  ms: number;
  /** A window's (every point comes back `ms` after it went), not a bucket's (refilled continuously). */
  window: boolean;
}

type Entry = [at: number, points: number];

/**
 * What a limiter keeps of one limit: a bucket's level, or a window's log of what went when; and
 * what went before any runner knew the limit's size (`early`), until a sized operation counts it.
 */
export type LimitState = ({ tokens: number; at: number } | { log: Entry[]; ms?: number } | object) & { early?: Entry[] };

/** Take (or say how long to wait), give back, or note what went before the size was known (`agoMs` ago). */
export type LimitOp = 'take' | 'give' | 'early';

const MINUTE_MS = 60_000;

/**
 * One operation at `now`: the state after it, and for a take that does not fit, the milliseconds
 * until it would (the state then holds what it held, nothing taken). A call larger than the whole
 * limit takes the whole limit: it goes alone. A state of the other shape, or one that makes no
 * sense (another tool's, a hand-edited row), is taken as a limit nothing has used.
 */
export function limitStep(state: unknown, size: LimitSize, op: LimitOp, wanted: number, now: number, agoMs = 0): { state: LimitState; waitMs: number } {
  const early = validEntries((state as { early?: unknown } | null)?.early).filter(([at]) => at > now - MINUTE_MS && at <= now);
  if (op === 'early') {
    const base = typeof state === 'object' && state !== null ? state : {};
    const at = now - Math.min(Math.max(0, agoMs), MINUTE_MS);
    return { state: { ...base, early: [...early, [at, Math.max(0, Math.ceil(wanted))]] }, waitMs: 0 };
  }
  const points = Math.min(Math.max(0, Math.ceil(wanted)), size.points);
  if (size.window) {
    // A window's length is learned from the oldest request a runner saw counted in it: a runner that came
    // later learns it short. The longest any runner asked with holds, for as long as anything in it counts.
    const ms = Math.max(size.ms, sharedLength(state));
    const log = [...validEntries((state as { log?: unknown } | null)?.log), ...early].filter(([at]) => at > now - ms && at <= now).sort((a, b) => a[0] - b[0]);
    const kept = (entries: Entry[]): LimitState => (entries.length > 0 ? { log: entries, ms } : { log: [] });
    const used = log.reduce((sum, [, p]) => sum + p, 0);
    if (op === 'take' && used + points <= size.points) return { state: kept([...log, [now, points]]), waitMs: 0 };
    if (op === 'give') return { state: kept(givenBack(log, points)), waitMs: 0 };
    let over = used + points - size.points;
    for (const [at, p] of log) {
      over -= p;
      if (over <= 0) return { state: kept(log), waitMs: Math.max(1, at + ms - now) };
    }
    return { state: kept(log), waitMs: 1 };
  }
  const kept = validBucket(state, size, now);
  // What went before the size was known is counted now, and as refilled since no more than the window's
  // length (a bucket's record holds no times): it errs slow.
  const owed = early.filter(([at]) => at > now - size.ms).reduce((sum, [, p]) => sum + p, 0);
  const tokens = Math.max(0, Math.min(size.points, kept.tokens + (Math.max(0, now - kept.at) * size.points) / size.ms) - owed);
  if (op === 'give') return { state: { tokens: Math.min(size.points, tokens + points), at: now }, waitMs: 0 };
  if (tokens >= points) return { state: { tokens: tokens - points, at: now }, waitMs: 0 };
  return { state: { tokens, at: now }, waitMs: Math.max(1, Math.ceil(((points - tokens) * size.ms) / size.points)) };
}

/** What a window gives back goes from the points that went last. */
function givenBack(log: Entry[], points: number): Entry[] {
  const kept = log.map(([at, p]) => [at, p] as Entry);
  for (let i = kept.length - 1; i >= 0 && points > 0; i--) {
    const back = Math.min(points, kept[i]![1]);
    kept[i]![1] -= back;
    points -= back;
  }
  return kept.filter(([, p]) => p > 0);
}

/** The window's length kept with its log: a minute at most, as the API's limits are. */
function sharedLength(state: unknown): number {
  const ms = (state as { ms?: unknown } | null)?.ms;
  return typeof ms === 'number' && ms > 0 && ms <= 60_000 ? ms : 0;
}

function validEntries(log: unknown): Entry[] {
  if (!Array.isArray(log)) return [];
  return log.filter((e): e is Entry => Array.isArray(e) && e.length === 2 && Number.isFinite(e[0]) && Number.isFinite(e[1]) && (e[1] as number) > 0);
}

function validBucket(state: unknown, size: LimitSize, now: number): { tokens: number; at: number } {
  const { tokens, at } = (state ?? {}) as { tokens?: unknown; at?: unknown };
  if (typeof tokens !== 'number' || typeof at !== 'number' || !Number.isFinite(tokens) || !Number.isFinite(at)) return { tokens: size.points, at: now };
  // A level from a clock ahead of this one refills from now, never backwards; below empty, it is empty: a record
  // holds a call no longer than the limit takes to refill.
  return { tokens: Math.min(size.points, Math.max(0, tokens)), at: Math.min(at, now) };
}
