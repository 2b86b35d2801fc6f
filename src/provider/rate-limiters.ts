import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';

/** One limit: `points` per `seconds`, in windows that start with their first call. */
export interface Limiter {
  /** Takes `points`, or takes nothing and says how many milliseconds to wait before asking again. */
  take(points: number): Promise<number>;
  /** Gives back points taken (a call that took several limits and was stopped by a later one). */
  giveBack(points: number): Promise<void>;
  /** Counts points already used, whether or not they fit (a call made before the limit was known). */
  charge(points: number): Promise<void>;
}

/** Where limits are kept: in this process, or in a store every runner of the organisation shares. */
export interface LimiterStore {
  readonly shared: boolean;
  limiter(key: string, points: number, seconds: number): Limiter;
}

type MakeLimiter = (options: { keyPrefix: string; points: number; duration: number }) => RateLimiterAbstract;

/**
 * Limiters of rate-limiter-flexible (docs/organisation.md: pacing): `make` gives one on a store,
 * or in memory. A refused take gives its points back, so that waiting calls do not use up the
 * window they wait for. One limiter per key and size.
 */
export class Limiters implements LimiterStore {
  private readonly made = new Map<string, Limiter>();

  constructor(
    private readonly make: MakeLimiter,
    readonly shared: boolean,
  ) {}

  limiter(key: string, points: number, seconds: number): Limiter {
    const id = `${key}:${points}/${seconds}`;
    let limiter = this.made.get(id);
    if (!limiter) {
      // Runners that learned other sizes still share the key's count: each holds it to its own size.
      const made = this.make({ keyPrefix: 'conclave:rate', points, duration: seconds });
      limiter = {
        take: (wanted) => {
          const points = Math.min(Math.ceil(wanted), made.points);
          return made.consume(key, points).then(
            () => 0,
            async (refusal: unknown) => {
              if (!isRefusal(refusal)) throw refusal;
              // A record that never expires (no limiter writes one: a hand-set key, another tool's) would hold every
              // call for ever: it goes, and the call asks again. A wait is never longer than this limiter's window.
              if (refusal.msBeforeNext < 0) {
                await made.delete(key);
                return 1;
              }
              await made.reward(key, points);
              return Math.min(Math.max(1, refusal.msBeforeNext), made.duration * 1000);
            },
          );
        },
        giveBack: async (wanted) => {
          await made.reward(key, Math.min(Math.ceil(wanted), made.points));
        },
        charge: async (used) => {
          await made.penalty(key, Math.min(Math.ceil(used), made.points));
        },
      };
      this.made.set(id, limiter);
    }
    return limiter;
  }
}

/** A refusal is a RateLimiterRes; a store's failure is an Error. */
function isRefusal(value: unknown): value is RateLimiterRes {
  return typeof value === 'object' && value !== null && !(value instanceof Error) && typeof (value as RateLimiterRes).msBeforeNext === 'number';
}

/** Limits kept in this process only. */
export async function localLimiters(): Promise<LimiterStore> {
  const { RateLimiterMemory } = await import('rate-limiter-flexible');
  return new Limiters((options) => new RateLimiterMemory(options), false);
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

  limiter(key: string, points: number, seconds: number): Limiter {
    const local = this.local.limiter(key, points, seconds);
    const shared = this.store.limiter(key, points, seconds);
    const either = <T>(use: (l: Limiter) => Promise<T>): Promise<T> => {
      if (this.failed) return use(local);
      return this.timeout(use(shared), 'a rate limiter').catch((e: unknown) => {
        if (!this.failed) {
          this.failed = true;
          this.onFailure(e);
        }
        return use(local);
      });
    };
    return { take: (n) => either((l) => l.take(n)), giveBack: (n) => either((l) => l.giveBack(n)), charge: (n) => either((l) => l.charge(n)) };
  }
}
