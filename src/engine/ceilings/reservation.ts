import { CallAborted } from '../../provider/provider-errors.js';

/** What a call could cost at most (docs/design.md: limits): its prompt's estimate plus max_tokens, and their price. */
export interface Worst {
  usd: number;
  tokens: number;
}

export const NO_WORST: Worst = { usd: 0, tokens: 0 };

/** A hold under one ceiling, settled once with what the call really cost (0 for a call that never left). */
export interface Held {
  settle(costUsd: number): void | Promise<void>;
}

/**
 * A ceiling's answer to a call's worst case: held; or wait, until a hold of this run settles
 * (`'settle'`) or for so many milliseconds (others' holds, which this process is not told of);
 * or refused, with the error that names the ceiling.
 */
export type Answer = { held: Held } | { wait: 'settle' | number } | { refused: Error };

/** Something a call's worst case must fit under: the run's budget, a spawned subtree's carve, a spend pool. */
export interface Ceiling {
  hold(worst: Worst): Answer | Promise<Answer>;
}

/** A call's holds under every ceiling it falls under: settled once, with its real cost. */
export type Reservation = (costUsd: number) => Promise<void>;

/**
 * The one way a call is admitted under conclave's ceilings (docs/ARCHITECTURE.md: the reservation
 * primitive). A call holds its worst case under each ceiling in turn; when one cannot hold it, the
 * call gives back what it holds, and waits while something in flight could settle for less, or is
 * refused with that ceiling's error when nothing could. A waiting call holds nothing, so two
 * waiting calls never keep each other out. Every settlement (and a raised limit: `changed`) wakes
 * the waiting calls to try again.
 */
export class Reservations {
  /** Counts what could make room, so that one that lands while a call is asking is not missed. */
  private changes = 0;
  private readonly waiting = new Set<() => void>();

  async reserve(ceilings: readonly Ceiling[], worst: Worst, signal: AbortSignal): Promise<Reservation> {
    for (;;) {
      if (signal.aborted) throw new CallAborted();
      let seen = this.changes;
      const held: Held[] = [];
      let blocked: Exclude<Answer, { held: Held }> | undefined;
      try {
        for (const ceiling of ceilings) {
          const answer = await ceiling.hold(worst);
          if (!('held' in answer)) {
            blocked = answer;
            break;
          }
          held.push(answer.held);
        }
      } catch (e) {
        await this.settle(held, 0);
        throw e;
      }
      if (blocked === undefined) return this.once(held);
      if (held.length > 0) {
        await this.settle(held, 0);
        seen++; // its own giving back is no news to it
      }
      if ('refused' in blocked) throw blocked.refused;
      if (this.changes !== seen) continue;
      await this.changed(signal, blocked.wait === 'settle' ? undefined : blocked.wait);
    }
  }

  /** A limit was raised, or something else made room: the waiting calls try again. */
  wake(): void {
    this.changes++;
    for (const wake of [...this.waiting]) wake();
  }

  private once(held: readonly Held[]): Reservation {
    let settled = false;
    return async (costUsd) => {
      if (settled) return;
      settled = true;
      await this.settle(held, costUsd);
    };
  }

  /** Settles the holds, the last taken first; every one is settled even when one throws (a pool keeps what it could not settle). */
  private async settle(held: readonly Held[], costUsd: number): Promise<void> {
    for (const hold of [...held].reverse()) {
      try {
        await hold.settle(costUsd);
      } catch {
        // Each ceiling settles its own: one that fails cannot hold the others' room.
      }
    }
    this.wake();
  }

  /** Resolves at the next change, after `pollMs` when given, or when the signal aborts; leaves no listener behind. */
  private changed(signal: AbortSignal, pollMs: number | undefined): Promise<void> {
    return new Promise((resolve) => {
      const timer = pollMs === undefined ? undefined : setTimeout(() => wake(), pollMs);
      const wake = () => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      this.waiting.add(wake);
      // Asking the ceilings took time: the signal may have aborted meanwhile, and would never fire again.
      if (signal.aborted) wake();
      else signal.addEventListener('abort', wake, { once: true });
    });
  }
}

/**
 * A ceiling this process keeps itself (the run's budget, a spawned subtree's budget_usd): a call
 * is held while `fits(held + worst)`; when it does not fit, it waits while calls hold something
 * here (they may settle for less), and is refused with `refusal` when none does.
 */
export class LocalCeiling {
  private held: Worst = NO_WORST;
  private calls = 0;

  constructor(
    /** Whether this much, held beside what was spent, stays under the ceiling. */
    private readonly fits: (total: Worst) => boolean,
  ) {}

  hold(worst: Worst, refusal: (worst: Worst) => Error): Answer {
    if (!this.fits(plus(this.held, worst, 1))) return this.calls > 0 ? { wait: 'settle' } : { refused: refusal(worst) };
    this.add(worst, 1);
    return { held: { settle: () => this.add(worst, -1) } };
  }

  private add(worst: Worst, sign: 1 | -1): void {
    this.calls += sign;
    // Back to exactly nothing when nothing is held: sums of dollars would otherwise drift.
    this.held = this.calls === 0 ? NO_WORST : plus(this.held, worst, sign);
  }
}

function plus(a: Worst, b: Worst, sign: 1 | -1): Worst {
  return { usd: a.usd + sign * b.usd, tokens: a.tokens + sign * b.tokens };
}
