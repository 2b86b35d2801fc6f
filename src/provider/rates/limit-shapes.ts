import type { RateDimension, RateReading } from './rate-headers.js';
import type { CallNeed } from './rate-types.js';

const MINUTE_MS = 60_000;
/** Two resets this close are the same moment: the server wrote both from one window. */
const SAME_RESET_MS = 20;
/**
 * Added to a window's length: the server counts a request from when it came, a little after it
 * left, and the requests of a burst come over some milliseconds; a window a little long is slower
 * by that, one a little short is refused.
 */
const WINDOW_MARGIN_MS = 100;
/** Readings after which a limit's shape is taken as known (a bucket's, unless two showed a window's reset). */
const SHAPE_READINGS = 3;

/**
 * Which limits are a token bucket's and which a window's (fixed or sliding), as the readings show
 * them (docs/organisation.md: pacing), and what a window still holds of this process's calls. A
 * bucket's reset moves with every request; a window's stays put while its count grows. Read as a
 * bucket, a window's reset makes it many times too long (one request used, the oldest leaving in
 * 5 s, reads as 12 × 5 s for a limit of 12).
 */
export class LimitShapes {
  /** Each limit's last precise reset, what was used at it, and the first request seen counted in it. */
  private readonly resets: Partial<Record<RateDimension, { resetAt: number; used: number; firstSent: number }>> = {};
  private readonly windows = new Set<RateDimension>();
  /** Readings seen of each limit, up to SHAPE_READINGS (a reset in whole seconds, the API's minute, counts as all). */
  private readonly readings = new Map<RateDimension, number>();
  /** What each call let through in the last minute took, and when. */
  private readonly recent: { at: number; need: CallNeed }[] = [];

  /** When each bucket last showed others using it: a word with less left than this process's own calls explain. */
  private readonly othersSeen: Partial<Record<RateDimension, number>> = {};

  isWindow(d: RateDimension): boolean {
    return this.windows.has(d);
  }

  /** A bucket's new word said `remaining` where this process's calls alone would leave `expected` (a point more for rounding). */
  compare(d: RateDimension, remaining: number, expected: number, now: number): void {
    if (remaining < expected - 1) this.othersSeen[d] = now;
  }

  /** Whether others than this process used the bucket in the last minute. */
  shared(d: RateDimension, now: number): boolean {
    return now - (this.othersSeen[d] ?? -Infinity) < MINUTE_MS;
  }

  /** Whether the readings have told a bucket from a window yet. */
  known(d: RateDimension): boolean {
    return (this.readings.get(d) ?? 0) >= SHAPE_READINGS;
  }

  /** A call went at `at`. */
  sent(at: number, need: CallNeed): void {
    this.recent.push({ at, need });
    while (this.recent.length > 0 && this.recent[0]!.at < at - MINUTE_MS) this.recent.shift();
  }

  /**
   * A reading of a request sent at `sentAt` (`taken`: answered, not refused; a refusal took
   * nothing, and a bucket's reset then stays put as it refills, as a window's does while it fills).
   * For a window, the length it shows: from the first request seen counted in it to its reset,
   * never longer than the server's (the first request seen may not be the first in it).
   */
  read(d: RateDimension, reading: RateReading, sentAt: number, precise: boolean, taken: boolean): { windowMs?: number } {
    const used = reading.limit - reading.remaining;
    this.readings.set(d, precise ? (this.readings.get(d) ?? 0) + 1 : SHAPE_READINGS);
    if (!precise || used <= 0 || !taken) return {};
    const last = this.resets[d];
    // Read as a bucket, each point used moves the reset by the time a point takes to come back: a fast bucket's
    // (thousands a minute) moves less than the tolerance, so the tolerance is also under half of that.
    const perPoint = (reading.resetAt - sentAt) / used;
    const tolerance = last === undefined ? 0 : Math.min(SAME_RESET_MS, (perPoint * Math.abs(last.used - used)) / 2);
    const same = last !== undefined && last.used !== used && Math.abs(last.resetAt - reading.resetAt) <= tolerance;
    const firstSent = same ? Math.min(last.firstSent, sentAt) : sentAt;
    this.resets[d] = { resetAt: reading.resetAt, used, firstSent };
    if (last !== undefined && last.used !== used) this.readings.set(d, SHAPE_READINGS);
    if (!same) return {};
    this.windows.add(d);
    return { windowMs: Math.min(MINUTE_MS, Math.max(100, reading.resetAt - firstSent + WINDOW_MARGIN_MS)) };
  }

  /**
   * Milliseconds until a window lets `share` more through. Before its reset nothing comes back:
   * what the word left less what went since (`since`). After it, the window holds what this
   * process sent in the last `windowMs` (a sliding window lets each request go a window after it
   * came; a fixed one, all at its reset).
   */
  untilAllows(d: RateDimension, word: RateReading, since: number, windowMs: number, share: number, now: number): number {
    if (now < word.resetAt) return word.remaining - since >= share ? 0 : word.resetAt - now;
    const inside = this.recent.filter((r) => r.at > now - windowMs);
    let held = inside.reduce((sum, r) => sum + r.need[d], 0);
    if (word.limit - held >= share) return 0;
    for (const r of inside) {
      held -= r.need[d];
      if (word.limit - held >= share) return Math.max(1, r.at + windowMs - now);
    }
    return 1;
  }
}

/** The server's latest word on a limit, as the pacer keeps it (rate-gate.ts). */
export interface Word extends RateReading {
  /** The admission whose response said it: calls let through after it are not counted in it. */
  seq: number;
  /** When its request left: the server took it, and wrote the word, after. */
  sentAt: number;
  seenAt: number;
  /**
   * What calls let through before it and still unanswered took: the server may have taken their
   * requests after this one (they raced on the way), so they are counted as not in it.
   */
  carried: number;
}

/** A limit's size, given or learned: `used`, the points the reading it was learned from said were used (0: no measure). */
export interface LearnedSize {
  points: number;
  /** How long the limit takes to refill from empty. */
  ms: number;
  given: boolean;
  used: number;
  window?: true;
}

/**
 * What the server's bucket holds at `now`, followed as the server keeps it: from what the word
 * left at `from` (when its request went: the server took it after that, and wrote the word then),
 * refilled at the rate and never over the limit, less each call this process let through since,
 * when it went. Calls let through before the word and still unanswered (`carried`) are counted as
 * taken after it. The rate is at most the word's own line, from what it left to full at its reset
 * (a minute at most): a rate learned from an earlier word may be a little too fast.
 */
export function bucketLevel(
  word: Word,
  since: { at: number; points: number }[],
  learnedRate: number,
  now: number,
  from = word.sentAt,
): { left: number; rate: number } {
  let rate = learnedRate;
  const refillMs = Math.min(word.resetAt - from, MINUTE_MS);
  if (word.remaining < word.limit && refillMs > 0) rate = Math.min(rate, (word.limit - word.remaining) / refillMs);
  let level = word.remaining - word.carried;
  let at = from;
  for (const s of since) {
    level = Math.min(word.limit, level + rate * Math.max(0, s.at - at)) - s.points;
    at = Math.max(at, s.at);
  }
  return { left: Math.min(word.limit, level + rate * Math.max(0, now - at)), rate };
}

/** Milliseconds until the server's bucket, followed from `from` (bucketLevel), holds `share`. */
export function untilBucketAllows(word: Word, since: { at: number; points: number }[], learnedRate: number, share: number, now: number, from?: number): number {
  const { left, rate } = bucketLevel(word, since, learnedRate, now, from);
  return left >= share ? 0 : Math.ceil((share - left) / rate);
}
