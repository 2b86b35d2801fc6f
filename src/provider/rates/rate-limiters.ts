import { limitStep, type LimitOp, type LimitSize, type LimitState } from './limit-share.js';

export type { LimitSize } from './limit-share.js';

/** One limit, as given or learned (limit-share.ts). */
export interface Limiter {
  /** Takes `points`, or takes nothing and says how many milliseconds to wait before asking again. */
  take(points: number): Promise<number>;
  /** Gives back points taken (a call that took several limits and was stopped by a later one, or used less). */
  giveBack(points: number): Promise<void>;
}

/** Where limits are kept: in this process, or in a store every runner of the organisation shares. */
export interface LimiterStore {
  readonly shared: boolean;
  limiter(key: string, size: LimitSize): Limiter;
  /** Notes `points` that went `agoMs` ago before the limit's size was known: the first limiter of the key to be used counts them. */
  early(key: string, points: number, agoMs: number): Promise<void>;
}

/** The size an early note is made with: it has none (limit-share.ts keeps such notes a minute). */
const UNSIZED: LimitSize = { points: 0, ms: 60_000, window: false };

/** Keeps each key's limit and changes it atomically: in memory, Redis or PostgreSQL (store-limits.ts). */
export interface LimitKeeper {
  /** One limitStep on the key's state; the milliseconds a take must wait (0: taken). */
  apply(key: string, size: LimitSize, op: LimitOp, points: number, agoMs?: number): Promise<number>;
}

/**
 * Limiters on a keeper (docs/organisation.md: pacing). Runners that learned other sizes of one
 * limit still share the key's state: each holds it to its own size.
 */
export class Limiters implements LimiterStore {
  constructor(
    private readonly keeper: LimitKeeper,
    readonly shared: boolean,
  ) {}

  async early(key: string, points: number, agoMs: number): Promise<void> {
    await this.keeper.apply(key, UNSIZED, 'early', points, agoMs);
  }

  limiter(key: string, size: LimitSize): Limiter {
    return {
      take: (points) => this.keeper.apply(key, size, 'take', points),
      giveBack: async (points) => void (await this.keeper.apply(key, size, 'give', points)),
    };
  }
}

/** Limits kept in this process's memory, on its clock. */
export class MemoryLimitKeeper implements LimitKeeper {
  private readonly states = new Map<string, LimitState>();

  async apply(key: string, size: LimitSize, op: LimitOp, points: number, agoMs = 0): Promise<number> {
    const { state, waitMs } = limitStep(this.states.get(key), size, op, points, Date.now(), agoMs);
    this.states.set(key, state);
    return waitMs;
  }
}

/** Limits kept in this process only. */
export async function localLimiters(): Promise<LimiterStore> {
  return new Limiters(new MemoryLimitKeeper(), false);
}

/**
 * The shared limiters of --coordinate, until the store fails: that is reported once, and from
 * then on the same limits are kept in this process (never none).
 */
export class FallbackLimiters implements LimiterStore {
  readonly shared = true;
  private failed = false;

  constructor(
    private readonly store: LimiterStore,
    private readonly local: LimiterStore,
    private readonly timeout: <T>(work: Promise<T>, what: string) => Promise<T>,
    /** Told of the store's first failure. */
    private readonly onFailure: (error: unknown) => void,
  ) {}

  early(key: string, points: number, agoMs: number): Promise<void> {
    return this.either(
      () => this.store.early(key, points, agoMs),
      () => this.local.early(key, points, agoMs),
    );
  }

  limiter(key: string, size: LimitSize): Limiter {
    const local = this.local.limiter(key, size);
    const shared = this.store.limiter(key, size);
    return {
      take: (n) =>
        this.either(
          () => shared.take(n),
          () => local.take(n),
        ),
      giveBack: (n) =>
        this.either(
          () => shared.giveBack(n),
          () => local.giveBack(n),
        ),
    };
  }

  /** The store's answer, or once it has failed (said once), this process's. */
  private either<T>(store: () => Promise<T>, local: () => Promise<T>): Promise<T> {
    if (this.failed) return local();
    return this.timeout(store(), 'a rate limiter').catch((e: unknown) => {
      if (!this.failed) {
        this.failed = true;
        this.onFailure(e);
      }
      return local();
    });
  }
}
