import { randomUUID } from 'node:crypto';
import { ConclaveError, UsageError } from '../../conclave-error.js';
import { withTimeout } from '../../provider/stores/coordinate.js';
import { formatUsd } from '../../provider/money.js';
import type { PoolLedger, PoolWindow, Standing } from '../../provider/stores/spend-ledger.js';
import type { Answer, Ceiling, Worst } from './reservation.js';
import { LimitReached } from '../ending.js';
import { detached, nothingToDo } from '../../detached.js';

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

/** A pool as `--spend-pool` (or `named`: CONCLAVE_SPEND_POOLS) gives it. */
export function poolSpec(text: string, named = '--spend-pool'): PoolSpec {
  const match = /^([A-Za-z0-9_.-]{1,64})=\$?([0-9]+(?:\.[0-9]+)?)\/([a-z0-9]+)$/.exec(text.trim());
  const capUsd = Number(match?.[2]);
  // Kept in whole millionths of a dollar, which a store's integers hold exactly up to $1,000,000,000.
  if (!match || !(capUsd > 0) || capUsd > 1e9 || windowOf(match[3]!, 0) === undefined) {
    throw new PoolSpecError(
      `${named} takes NAME=DOLLARS/WINDOW, such as org=200/day or repo=20/12h (DOLLARS above 0, at most 1000000000; windows: hour, day, week, month, or a ` +
        `number of hours or days); got ${JSON.stringify(text)}`,
    );
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
/** How often a call waits to look again while other runs' holds fill the pool (they settle, or expire in HOLD_MS). */
const OTHERS_POLL_MS = 1_000;
const MICRO = 1_000_000;

/** A pool's record in the store holds what is no amount (a key of another kind, text, a number out of range): exit 2, the session kept. */
export class PoolValueError extends ConclaveError {
  constructor(message: string) {
    super(message, { ending: 'refused' });
  }
}

/**
 * The spend pools a run draws from (docs/organisation.md: spend pools), as one ceiling
 * (`reservation.ts`). Each live call holds its worst case in every pool before it starts (§ limits'
 * rule, shared by every runner), and settles with its real cost after. A call no pool has room for waits while calls in flight (this run's or
 * others') hold what it needs, and stops the run at the limit when nothing in flight could make
 * room. A pool is a ceiling: when the store cannot be asked, the run stops at the limit
 * (resumable once the store answers); it never goes on unchecked.
 */
export class SpendPools implements Ceiling {
  /** Unique to this process: a resume soon after a crash never takes the dead process's holds for its own. */
  private readonly holder = `${randomUUID().slice(0, 8)}`;
  private ids = 0;
  /** The windows each call in flight holds its worst case in, by the hold's id. */
  private readonly live = new Map<string, PoolWindow[]>();
  /** Settlements the store did not take yet: paid calls, counted at the next chance before any new hold. */
  private readonly unsettled: { id: string; window: PoolWindow; amount: number }[] = [];
  private flushing: Promise<void> | undefined;
  private readonly renewal: NodeJS.Timeout;

  constructor(
    readonly specs: readonly PoolSpec[],
    private readonly ledger: PoolLedger,
    /** The store, as the user may see it. */
    readonly store: string,
    private readonly runId: string,
    /** What a store's error says, without the credentials of its URL. */
    private readonly explain: (error: unknown) => string,
  ) {
    // A renewal the store misses is no stop (renew): the next reservation asks it, and stops the run if it cannot.
    this.renewal = setInterval(() => detached(this.renew(), nothingToDo), HOLD_MS / 3).unref();
  }

  /**
   * Holds `worst.usd` in every pool, or says why it cannot: refused when what was spent already
   * leaves too little, else wait (this run's calls in flight wake it when they settle; others'
   * are looked at again each second).
   */
  async hold(worst: Worst): Promise<Answer> {
    const id = `${this.runId}:${this.holder}:${++this.ids}`;
    const holds: PoolWindow[] = [];
    let refused: { spec: PoolSpec; standing: Standing; end: number } | undefined;
    try {
      await this.settleLeftovers();
      // The store's clock picks the window: every runner counts a call in the same one, whatever its own clock says.
      const now = await withTimeout(this.ledger.now(), "the store's clock");
      for (const spec of this.specs) {
        const { start, end } = windowOf(spec.per, now)!;
        const window: PoolWindow = { pool: spec.name, start, keepMs: end - start + HOLD_MS };
        const answer = checkedStanding(
          spec,
          await withTimeout(this.ledger.reserve(window, id, micros(worst.usd), micros(spec.capUsd), HOLD_MS), 'a spend pool reservation'),
        );
        if (!answer.granted) {
          refused = { spec, standing: answer, end };
          break;
        }
        holds.push(window);
      }
    } catch (e) {
      await this.giveBack(id, holds);
      throw this.unchecked(e);
    }
    if (!refused) {
      this.live.set(id, holds);
      return { held: { settle: (costUsd) => this.settle(id, costUsd) } };
    }
    await this.giveBack(id, holds);
    const { spec, standing, end } = refused;
    // Nothing in flight can make room: what was spent already leaves too little.
    if (standing.spent + micros(worst.usd) > micros(spec.capUsd)) return { refused: this.limitReached(spec, standing, worst.usd, end) };
    return { wait: this.live.size > 0 ? 'settle' : OTHERS_POLL_MS };
  }

  /** Stops the renewal; what is in flight was settled by the run. */
  close(): void {
    clearInterval(this.renewal);
  }

  private async settle(id: string, costUsd: number): Promise<void> {
    const holds = this.live.get(id) ?? [];
    for (const window of holds) this.unsettled.push({ id, window, amount: micros(costUsd) });
    try {
      await this.settleLeftovers();
    } catch {
      // Kept: the next reservation settles it first, or stops the run because the store cannot be asked.
    } finally {
      // Out of the live set only once the store has its cost (or it is kept to settle): a waiting call never sees the pool emptier than it is.
      this.live.delete(id);
    }
  }

  /** Settlements the store has not taken yet, in order, one flush at a time (two at once would count a call twice); throws when the store fails. */
  private settleLeftovers(): Promise<void> {
    if (this.flushing !== undefined) return this.flushing;
    if (this.unsettled.length === 0) return Promise.resolve();
    const flush = async () => {
      while (this.unsettled.length > 0) {
        const { id, window, amount } = this.unsettled[0]!;
        await withTimeout(this.ledger.settle(window, id, amount), 'a spend pool settlement');
        this.unsettled.shift();
      }
    };
    this.flushing = flush().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /** A refused call's holds, given back; a store that fails here lets them expire (HOLD_MS). */
  private async giveBack(id: string, holds: readonly PoolWindow[]): Promise<void> {
    for (const window of holds) await withTimeout(this.ledger.settle(window, id, 0), 'a spend pool release').catch(() => {});
  }

  private async renew(): Promise<void> {
    if (this.live.size === 0) return;
    const byWindow = new Map<string, { window: PoolWindow; ids: string[] }>();
    for (const [id, holds] of this.live) {
      for (const window of holds) {
        const key = `${window.pool}:${window.start}`;
        const entry = byWindow.get(key) ?? byWindow.set(key, { window, ids: [] }).get(key)!;
        entry.ids.push(id);
      }
    }
    // A renewal the store misses is no stop: the next reservation asks it, and stops the run if it cannot.
    for (const { window, ids } of byWindow.values()) await withTimeout(this.ledger.renew(window, ids, HOLD_MS), 'a spend pool renewal').catch(() => {});
  }

  /** A store that cannot be asked stops the run at the pool's limit; one that holds no amount is refused. */
  private unchecked(e: unknown): ConclaveError {
    if (e instanceof PoolValueError) return e;
    const why = this.explain(e);
    if (/CONCLAVE_BAD_VALUE|WRONGTYPE|not an integer|out of range/i.test(why)) {
      return new PoolValueError(
        `the spend pools in the --coordinate store ${this.store} hold something that is not an amount (${why}): fix or delete the pool's keys, then resume`,
      );
    }
    const names = this.specs.map((s) => s.name).join(', ');
    return new LimitReached('spend_pool', `${names} cannot be checked: the --coordinate store ${this.store} failed (${why}); resume once it answers`);
  }

  private limitReached(spec: PoolSpec, standing: Standing, worstUsd: number, end: number): LimitReached {
    const spent = standing.spent / MICRO;
    const held = standing.held / MICRO;
    const left = Math.max(0, spec.capUsd - spent - held);
    return new LimitReached(
      'spend_pool',
      `${spec.name} (${formatUsd(spent)} spent${held > 0 ? ` and ${formatUsd(held)} held by calls in flight` : ''} of ${formatUsd(spec.capUsd)} per ` +
        `${spec.per}: ${formatUsd(left)} left, and the next call could cost up to ${formatUsd(worstUsd)}; the pool has room again at ` +
        `${new Date(end).toISOString()}, or sooner if calls in flight cost less than they hold)`,
    );
  }
}

/** Amounts in millionths of a dollar that a pool can hold: whole, not negative, and at most $1,000,000,000 (exact in a double). */
const MAX_MICROS = 1e9 * MICRO;

/** The store's answer, when its amounts are amounts. */
function checkedStanding(spec: PoolSpec, answer: Standing & { granted: boolean }): Standing & { granted: boolean } {
  for (const [what, value] of [
    ['spent', answer.spent],
    ['held', answer.held],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0 || value > MAX_MICROS) {
      throw new PoolValueError(
        `the spend pool ${spec.name} in the store says ${String(value)} millionths of a dollar ${what}, which is no amount a pool holds: fix or delete the ` +
          `pool's keys, then resume`,
      );
    }
  }
  return answer;
}

/** Dollars as whole millionths, rounded up: a pool is never charged less than a call cost. */
function micros(usd: number): number {
  return Math.ceil(usd * MICRO);
}
