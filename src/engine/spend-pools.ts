import { UsageError } from '../conclave-error.js';
import { withTimeout } from '../provider/coordinate.js';
import { formatUsd } from '../provider/money.js';
import type { PoolLedger, PoolWindow, Standing } from '../provider/spend-ledger.js';
import { CallAborted } from '../provider/provider-errors.js';
import { LimitReached } from './ending.js';

/** `--spend-pool org=200/day`: a ceiling on what every run that names the pool spends in each window. */
export interface PoolSpec {
  name: string;
  capUsd: number;
  /** As written: `day`, `12h`. */
  per: string;
}

/** A --spend-pool that is not NAME=DOLLARS/WINDOW. */
export class PoolSpecError extends UsageError {}

const NAMED: Record<string, number> = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000 };
const UNIT: Record<string, number> = { h: 3_600_000, d: 86_400_000 };

export function poolSpec(text: string): PoolSpec {
  const match = /^([A-Za-z0-9_.-]{1,64})=\$?([0-9]+(?:\.[0-9]+)?)\/([a-z0-9]+)$/.exec(text.trim());
  const capUsd = Number(match?.[2]);
  // Kept in whole millionths of a dollar, which a store's integers hold exactly up to $1,000,000,000.
  if (!match || !(capUsd > 0) || capUsd > 1e9 || windowOf(match[3]!, 0) === undefined) {
    throw new PoolSpecError(`--spend-pool takes NAME=DOLLARS/WINDOW, such as org=200/day or repo=20/12h (DOLLARS above 0, at most 1000000000; windows: hour, day, week, month, or a number of hours or days); got ${JSON.stringify(text)}`);
  }
  return { name: match[1]!, capUsd, per: match[3]! };
}

/**
 * The window of `per` that holds `now`: named windows and durations begin at multiples of their
 * length since 1970-01-01 UTC (a day at midnight UTC), a month on its first day.
 */
export function windowOf(per: string, now: number): { start: number; end: number } | undefined {
  if (per === 'month') {
    const d = new Date(now);
    return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  }
  const counted = /^([1-9][0-9]{0,3})([hd])$/.exec(per);
  const length = NAMED[per] ?? (counted ? Number(counted[1]) * UNIT[counted[2]!]! : undefined);
  if (length === undefined) return undefined;
  const start = Math.floor(now / length) * length;
  return { start, end: start + length };
}

/** How long a hold lasts unless its runner renews it: a runner that died gives its holds back within this. */
export const HOLD_MS = 60_000;
const MICRO = 1_000_000;

/**
 * The spend pools a run draws from (docs/organisation.md: spend pools). Each live call holds its
 * worst case in every pool before it starts (§ limits' rule, shared by every runner), and settles
 * with its real cost after. A call no pool has room for waits while this run's own calls are in
 * flight (they may settle for less), and otherwise stops the run at the limit. A store that
 * fails is reported once; the run then goes on under its own limits.
 */
export class SpendPools {
  private ids = 0;
  private failed = false;
  /** The windows each call in flight holds its worst case in, by the hold's id. */
  private readonly live = new Map<string, PoolWindow[]>();
  private readonly waiting: (() => void)[] = [];
  private readonly renewal: NodeJS.Timeout;

  constructor(
    readonly specs: readonly PoolSpec[],
    private readonly ledger: PoolLedger,
    /** The store, as the user may see it. */
    readonly store: string,
    private readonly runId: string,
    /** Told of the store's first failure. */
    private readonly onFailure: (error: unknown) => void,
  ) {
    this.renewal = setInterval(() => void this.renew(), HOLD_MS / 3).unref();
  }

  /** Holds `worstUsd` in every pool; gives back the settle, to call with what the call cost. */
  async reserve(worstUsd: number, signal: AbortSignal): Promise<(costUsd: number) => Promise<void>> {
    for (;;) {
      if (signal.aborted) throw new CallAborted();
      if (this.failed) return async () => {};
      const id = `${this.runId}:${++this.ids}`;
      const holds: PoolWindow[] = [];
      let refused: { spec: PoolSpec; standing: Standing; end: number } | undefined;
      try {
        for (const spec of this.specs) {
          const now = Date.now();
          const { start, end } = windowOf(spec.per, now)!;
          const window: PoolWindow = { pool: spec.name, start, keepMs: end - start + HOLD_MS };
          const answer = await withTimeout(this.ledger.reserve(window, id, micros(worstUsd), micros(spec.capUsd), now + HOLD_MS), 'a spend pool reservation');
          if (!answer.granted) {
            refused = { spec, standing: answer, end };
            break;
          }
          holds.push(window);
        }
      } catch (e) {
        this.fail(e);
        return async () => {};
      }
      if (!refused) {
        this.live.set(id, holds);
        return (costUsd) => this.settle(id, costUsd);
      }
      await this.giveBack(id, holds);
      if (this.live.size === 0) throw this.limitReached(refused.spec, refused.standing, worstUsd, refused.end);
      // The signal outlives this wait (a call may wait many times): its listener goes with the wait.
      await new Promise<void>((resolve) => {
        const wake = () => (signal.removeEventListener('abort', wake), resolve());
        this.waiting.push(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
  }

  /** Stops the renewal; what is in flight was settled by the run. */
  close(): void {
    clearInterval(this.renewal);
  }

  private async settle(id: string, costUsd: number): Promise<void> {
    const holds = this.live.get(id) ?? [];
    this.live.delete(id);
    try {
      if (!this.failed) for (const window of holds) await withTimeout(this.ledger.settle(window, id, micros(costUsd)), 'a spend pool settlement');
    } catch (e) {
      this.fail(e);
    }
    for (const wake of this.waiting.splice(0)) wake();
  }

  private async giveBack(id: string, holds: readonly PoolWindow[]): Promise<void> {
    try {
      for (const window of holds) await withTimeout(this.ledger.settle(window, id, 0), 'a spend pool release');
    } catch (e) {
      this.fail(e);
    }
  }

  private async renew(): Promise<void> {
    if (this.failed || this.live.size === 0) return;
    const byWindow = new Map<string, { window: PoolWindow; ids: string[] }>();
    for (const [id, holds] of this.live) {
      for (const window of holds) {
        const key = `${window.pool}:${window.start}`;
        const entry = byWindow.get(key) ?? byWindow.set(key, { window, ids: [] }).get(key)!;
        entry.ids.push(id);
      }
    }
    try {
      for (const { window, ids } of byWindow.values()) await withTimeout(this.ledger.renew(window, ids, Date.now() + HOLD_MS), 'a spend pool renewal');
    } catch (e) {
      this.fail(e);
    }
  }

  private fail(e: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.onFailure(e);
    for (const wake of this.waiting.splice(0)) wake();
  }

  private limitReached(spec: PoolSpec, standing: Standing, worstUsd: number, end: number): LimitReached {
    const spent = standing.spent / MICRO;
    const held = standing.held / MICRO;
    const left = Math.max(0, spec.capUsd - spent - held);
    return new LimitReached(
      'spend_pool',
      `${spec.name} (${formatUsd(spent)} spent${held > 0 ? ` and ${formatUsd(held)} held by calls in flight` : ''} of ${formatUsd(spec.capUsd)} per ${spec.per}: ${formatUsd(left)} left, and the next call could cost up to ${formatUsd(worstUsd)}; the pool has room again at ${new Date(end).toISOString()}, or sooner if calls in flight cost less than they hold)`,
    );
  }
}

/** Dollars as whole millionths, rounded up: a pool is never charged less than a call cost. */
function micros(usd: number): number {
  return Math.ceil(usd * MICRO);
}
