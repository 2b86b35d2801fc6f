import { CallAborted } from '../provider-errors.js';
import { RATE_DIMENSIONS, rateReadings, retryAfterMs, type RateDimension, type RateReading } from './rate-headers.js';
import type { Limiter, LimiterStore } from './rate-limiters.js';
import { bucketLevel, LimitShapes, untilBucketAllows, type LearnedSize, type Word } from './limit-shapes.js';
import type { Admission, CallNeed, GivenLimits, WaitListener, WaitReason } from './rate-types.js';
import { SentCalls } from './sent-calls.js';
import { detached, nothingToDo } from '../../detached.js';

export type { Admission, CallNeed, GivenLimits, WaitListener, WaitReason } from './rate-types.js';

interface Waiter {
  need: CallNeed;
  signal: AbortSignal;
  onWait?: WaitListener;
  since: number;
  reason?: WaitReason;
  admit: (a: Admission) => void;
  refuse: (e: Error) => void;
}

const MINUTE_MS = 60_000;
/** The longest a waiting call sleeps before it looks again (a response can change what is left). */
const LOOK_AGAIN_MS = 1_000;
/** The longest other calls wait for the first call's headers (a stream sends them first, a slow server late). */
const PROBE_MS = 1_000;

/**
 * One model class's limits as a process sees them (docs/organisation.md: pacing): its calls in
 * the order they came, the server's latest word, what was learned or given, and the limiters.
 * The Pacer (`pacer.ts`) keeps one per class.
 */
export class RateGate {
  /** Given, or learned: `used`, the points the reading it was learned from said were used (0: no measure). */
  private readonly windows: Partial<Record<RateDimension, LearnedSize>> = {};
  private readonly word: Partial<Record<RateDimension, Word>> = {};
  /** A bucket's limits or a window's (limit-shapes.ts). */
  private readonly shapes = new LimitShapes();
  /** Shared: the one call in flight while a learned limit's shape is not known yet, and since when. */
  private shapeProbe: { seq: number; since: number } | undefined;
  /** Calls let through, by sequence number, for as long as a word might not count them (none while the server says nothing). */
  private readonly sent = new SentCalls();
  private seq = 0;
  private holdUntil = 0;
  /** The one call in flight while nothing is known of the limits, and since when. */
  private probe: { seq: number; since: number } | undefined;
  /** A response came without rate headers: only given limits apply. */
  private silent = false;
  private readonly queue: Waiter[] = [];
  /** What the limiters took for each call in flight, by sequence number. */
  private readonly taken = new Map<number, { need: CallNeed; dimensions: RateDimension[] }>();
  private pumping = false;
  /** Whether the limiters are this process's own, once they are made. */
  private localStore = false;
  private wake: () => void = () => {};

  constructor(
    private readonly name: string,
    given: GivenLimits,
    private readonly limiters: () => Promise<LimiterStore>,
  ) {
    for (const d of RATE_DIMENSIONS) {
      const points = given[d];
      if (points !== undefined) this.windows[d] = { points, ms: MINUTE_MS, given: true, used: 0 };
    }
  }

  admit(need: CallNeed, signal: AbortSignal, onWait?: WaitListener): Promise<Admission> {
    if (signal.aborted) return Promise.reject(new CallAborted());
    return new Promise<Admission>((admit, refuse) => {
      // The signal may outlive this call (a caller's own, reused): the listener goes when the call is let through or refused.
      // An aborted call leaves the queue at once, wherever it stands in it: none waits behind the head for it.
      const onAbort = () => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) {
          this.queue.splice(at, 1);
          waiter.refuse(new CallAborted());
        }
        this.wake();
      };
      const settled =
        <T>(settle: (value: T) => void) =>
        (value: T) => (signal.removeEventListener('abort', onAbort), settle(value));
      const waiter: Waiter = { need, signal, onWait, since: Date.now(), admit: settled(admit), refuse: settled(refuse) };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      detached(this.pump(), nothingToDo); // pump refuses the calls it holds on any failure: it never fails itself
    });
  }

  observe(admission: Admission, response?: { headers: Headers; status: number }): void {
    if (this.probe?.seq === admission.seq) this.probe = undefined;
    if (this.shapeProbe?.seq === admission.seq) this.shapeProbe = undefined;
    const own = this.sent.get(admission.seq);
    if (own) own.answered = true;
    if (response) {
      const now = Date.now();
      const readings = rateReadings(response.headers, now);
      // Without rate headers only given limits apply, until a response carries them again.
      this.silent = Object.keys(readings).length === 0;
      // The latest response is the server's latest word, whatever the order its requests went in.
      for (const [d, reading] of Object.entries(readings) as [RateDimension, RateReading][]) {
        const carried = this.sent.unansweredBefore(admission.seq, d);
        const before = this.word[d];
        if (before && before.seq < admission.seq && !this.shapes.isWindow(d)) {
          const ownOnly = bucketLevel(before, this.sent.since(d, before.seq, admission.seq + 1), this.rate(d, before), admission.at).left;
          this.shapes.compare(d, reading.remaining, ownOnly, now);
        }
        this.word[d] = { ...reading, seq: admission.seq, sentAt: admission.at, seenAt: now, carried };
        this.learn(d, reading, admission.at, response.headers, response.status < 400);
      }
      // A minute at most, as the SDK takes it: a proxy's `retry-after: 86400` must not hold every call for a day.
      if (response.status === 429) this.holdUntil = Math.max(this.holdUntil, now + Math.min(retryAfterMs(response.headers) ?? LOOK_AGAIN_MS, MINUTE_MS));
      // Refused or failed (429, 5xx, …), it used nothing: its points go back (a store's failure is the limiters' to say), and a retry asks again.
      if (response.status >= 400) detached(this.settle(admission, { requests: 0, input_tokens: 0, output_tokens: 0 }), nothingToDo);
    } else {
      this.taken.delete(admission.seq);
    }
    // A call still unanswered may bring an older word yet: it counts the calls let through after it, so they are kept.
    this.sent.forgetAnswered(Math.min(...Object.values(this.word).map((w) => w.seq)));
    this.wake();
  }

  /**
   * A limit's window, from a reading: the API's limits are per minute, and refill continuously;
   * a precise reset time (with fractions of a second) also tells the rate of a server that refills
   * faster. The server wrote the reading after the request left and before it was seen, so
   * measured from when it left, the window errs long, never short (a late-seen reading measured
   * from when it was seen reads as a window too short: more calls than the limit allows). That
   * error is the delay over the points used, so the reading with the most used is the nearest.
   */
  private learn(d: RateDimension, reading: RateReading, sentAt: number, headers: Headers, taken: boolean): void {
    if (this.windows[d]?.given) return;
    const precise = /\.\d/.test(headers.get(`anthropic-ratelimit-${d.replace('_', '-')}-reset`) ?? '');
    const used = reading.limit - reading.remaining;
    const { windowMs } = this.shapes.read(d, reading, sentAt, precise, taken);
    // A window's length is measured by its readings, the longest the nearest; a bucket's formula would make it too long.
    if (windowMs !== undefined) {
      const known = this.windows[d];
      if (!known?.window || known.points !== reading.limit || windowMs > known.ms)
        this.windows[d] = { points: reading.limit, ms: windowMs, given: false, used, window: true };
    }
    if (this.shapes.isWindow(d)) return;
    const measured = precise && used > 0 && reading.resetAt > sentAt ? ((reading.resetAt - sentAt) * reading.limit) / used : undefined;
    const known = this.windows[d]?.points === reading.limit ? this.windows[d] : undefined;
    if (measured === undefined) {
      if (!known) this.windows[d] = { points: reading.limit, ms: MINUTE_MS, given: false, used: 0 };
      return;
    }
    if (known && (known.used > used || (known.used === used && known.ms >= measured))) return;
    this.windows[d] = { points: reading.limit, ms: Math.min(MINUTE_MS, Math.max(100, measured)), given: false, used };
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const waiter = this.queue[0]!;
        if (waiter.signal.aborted) {
          this.queue.shift();
          waiter.refuse(new CallAborted());
          continue;
        }
        const wait = await this.waitFor(waiter.need);
        if ('taken' in wait) {
          this.queue.shift();
          const seq = ++this.seq;
          if (wait.taken.length > 0) this.taken.set(seq, { need: waiter.need, dimensions: wait.taken });
          if (!this.silent) this.sent.add(seq, waiter.need, Date.now());
          this.shapes.sent(Date.now(), waiter.need);
          if (wait.shapeProbe) {
            this.shapeProbe = { seq, since: Date.now() };
            this.noteEarly(waiter.need);
          }
          if (Object.keys(this.windows).length === 0 && !this.silent) {
            this.noteEarly(waiter.need);
            if (Object.keys(this.word).length === 0) this.probe = { seq, since: Date.now() };
          }
          const at = Date.now();
          waiter.admit({ gate: this.name, seq, at, waitedMs: at - waiter.since, ...(waiter.reason ? { reason: waiter.reason } : {}) });
          continue;
        }
        // Those behind it in the queue wait for the same limit.
        if (wait.reason) {
          for (const w of this.queue) {
            if (w.reason === wait.reason) continue;
            w.reason = wait.reason;
            w.onWait?.(wait.reason, wait.ms);
          }
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(wait.ms, LOOK_AGAIN_MS));
          this.wake = () => (clearTimeout(timer), resolve());
        });
      }
    } catch (e) {
      for (const waiter of this.queue.splice(0)) waiter.refuse(e as Error);
    } finally {
      this.pumping = false;
    }
  }

  /** Shared, a call let through before its limits' sizes were known is noted at once, with when it went: the first
   * runner to size a limit counts it. In one process learned limits are kept by the server's word alone. */
  private noteEarly(need: CallNeed): void {
    detached(this.early(need, Date.now()), nothingToDo); // a note the store misses: the next runner to size the limit counts without it
  }

  private async early(need: CallNeed, at: number): Promise<void> {
    const store = await this.limiters();
    if (store.shared) for (const d of RATE_DIMENSIONS) await store.early(`${this.name}:${d}`, need[d], Date.now() - at);
  }

  /** How long a call of this need must wait, and why; or, when it may go now, the limiters that took their points. */
  private async waitFor(need: CallNeed): Promise<{ ms: number; reason?: WaitReason } | { taken: RateDimension[]; shapeProbe?: true }> {
    const now = Date.now();
    if (now < this.holdUntil) return { ms: this.holdUntil - now, reason: 'retry_after' };
    if (this.probe && now - this.probe.since < PROBE_MS) return { ms: this.probe.since + PROBE_MS - now };
    let longest: { ms: number; reason: WaitReason } | undefined;
    for (const [d, word] of Object.entries(this.word) as [RateDimension, Word][]) {
      const ms = this.untilAllowed(d, word, need[d], now);
      if (ms > 0 && ms > (longest?.ms ?? 0)) longest = { ms, reason: d };
    }
    if (longest) return longest;
    // Learned limits only, kept in this process: nothing for the limiters (known once they are made).
    if (Object.keys(this.windows).length === 0 || (this.localStore && !Object.values(this.windows).some((w) => w.given))) return { taken: [] };
    const store = await this.limiters();
    this.localStore = !store.shared;
    // Shared, a learned limit's window is set in the store for every runner: until a second reading tells a
    // bucket from a window (a window read as a bucket is many times too long), one call at a time goes.
    if (store.shared && (Object.keys(this.windows) as RateDimension[]).some((d) => !this.windows[d]!.given && !this.shapes.known(d))) {
      if (this.shapeProbe && now - this.shapeProbe.since < PROBE_MS) return { ms: this.shapeProbe.since + PROBE_MS - now };
      return { taken: [], shapeProbe: true };
    }
    // In one process the server's word is the better guide to a limit learned from it: the
    // limiters keep those given, and, shared, every limit across the organisation's runners.
    const dimensions = (Object.keys(this.windows) as RateDimension[]).filter((d) => store.shared || this.windows[d]!.given);
    const taken: RateDimension[] = [];
    for (const d of dimensions) {
      const ms = await this.limiter(store, d).take(need[d]);
      if (ms === 0) {
        taken.push(d);
        continue;
      }
      for (const t of taken) await this.limiter(store, t).giveBack(need[t]);
      return { ms, reason: d };
    }
    return { taken };
  }

  /**
   * The limiter of a dimension, at the limit's size and shape: the store hands the limit out as
   * the server keeps it (limit-share.ts), shared by every runner when the store is.
   */
  private limiter(store: LimiterStore, d: RateDimension): Limiter {
    const { points, ms } = this.windows[d]!;
    return store.limiter(`${this.name}:${d}`, { points, ms, window: this.shapes.isWindow(d) });
  }

  /** A call's answer is whole: what the limiters took beyond what it used goes back, and the server's word counts what it used. */
  async settle(admission: Admission, used: CallNeed): Promise<void> {
    const sent = this.sent.get(admission.seq);
    if (sent) sent.need = used;
    const taken = this.taken.get(admission.seq);
    this.taken.delete(admission.seq);
    if (!taken) return;
    const store = await this.limiters();
    for (const d of taken.dimensions) {
      const over = taken.need[d] - used[d];
      if (over > 0) await this.limiter(store, d).giveBack(over);
    }
    this.wake();
  }

  /**
   * Milliseconds until the server's word, and what this process sent since, allow this call's share.
   * A bucket others use too, with no store that counts their calls, is followed from when its word
   * was seen: what refilled while the word was on its way, they may have taken.
   */
  private untilAllowed(d: RateDimension, word: Word, wanted: number, now: number): number {
    const share = Math.min(wanted, word.limit);
    const since = this.sent.since(d, word.seq);
    if (!this.shapes.isWindow(d)) {
      const from = this.localStore && this.shapes.shared(d, now) ? word.seenAt : word.sentAt;
      return untilBucketAllows(word, since, this.rate(d, word), share, now, from);
    }
    const sent = word.carried + since.reduce((sum, s) => sum + s.points, 0);
    return this.shapes.untilAllows(d, word, sent, this.windows[d]?.ms ?? MINUTE_MS, share, now);
  }

  private rate(d: RateDimension, word: Word): number {
    return (this.windows[d]?.points ?? word.limit) / (this.windows[d]?.ms ?? MINUTE_MS);
  }
}
