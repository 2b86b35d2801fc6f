import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { Reservations } from '../../src/engine/ceilings/reservation.js';
import { PoolSpecError, PoolValueError, poolSpec, SpendPools, windowOf } from '../../src/engine/ceilings/spend-pools.js';
import type { PoolLedger, PoolWindow, Standing } from '../../src/provider/stores/spend-ledger.js';

/** A store's ledger kept in memory: one window's holds and what was spent, as the Redis and PostgreSQL ledgers keep them. */
function memoryLedger(): PoolLedger {
  const holds = new Map<string, number>();
  let spent = 0;
  const standing = (): Standing => ({ spent, held: [...holds.values()].reduce((a, b) => a + b, 0) });
  return {
    now: async () => Date.now(),
    reserve: async (_w: PoolWindow, id, amount, cap) => {
      const before = standing();
      const granted = before.spent + before.held + amount <= cap;
      if (granted) holds.set(id, amount);
      return { ...before, granted };
    },
    settle: async (_w, id, amount) => {
      holds.delete(id);
      spent += amount;
    },
    renew: async () => {},
  };
}

/** One run's reservations per pools, as a run has. */
const reservations = new WeakMap<SpendPools, Reservations>();

/** A call of `usd` at most held in the pools alone, as ModelCalls holds one. */
function reserve(pools: SpendPools, usd: number, signal: AbortSignal): Promise<(costUsd: number) => Promise<void>> {
  const r = reservations.get(pools) ?? reservations.set(pools, new Reservations()).get(pools)!;
  return r.reserve([pools], { usd, tokens: 0 }, signal);
}

describe('spend pools', () => {
  it("wakes a call that waited for the run's own call to settle, and leaves no listener on its signal", async () => {
    const pools = new SpendPools([{ name: 'org', capUsd: 1, per: 'day' }], memoryLedger(), 'store', 'run', String);
    try {
      const agent = new AbortController();
      const settleFirst = await reserve(pools, 0.8, agent.signal);
      let second: ((costUsd: number) => Promise<void>) | undefined;
      const waiting = reserve(pools, 0.8, agent.signal).then((settle) => (second = settle));
      await new Promise((r) => setTimeout(r, 20));
      expect(second).toBeUndefined();
      expect(getEventListeners(agent.signal, 'abort')).toHaveLength(1);
      await settleFirst(0.1);
      await waiting;
      expect(second).toBeDefined();
      expect(getEventListeners(agent.signal, 'abort')).toHaveLength(0);
    } finally {
      pools.close();
    }
  });
});

describe('spend pools: holds, settlements and the store', () => {
  const org = [{ name: 'org', capUsd: 1, per: 'day' }];
  const explain = (e: unknown) => (e instanceof Error ? e.message : String(e));

  it('two processes of one run (a resume soon after a crash) never use the same hold id', async () => {
    const ids: string[] = [];
    const ledger = memoryLedger();
    const recording: PoolLedger = { ...ledger, reserve: (w, id, ...rest) => (ids.push(id), ledger.reserve(w, id, ...rest)) };
    const [dead, resumed] = [new SpendPools(org, recording, 'store', 'run', explain), new SpendPools(org, recording, 'store', 'run', explain)];
    try {
      const signal = new AbortController().signal;
      await reserve(dead, 0.1, signal);
      await reserve(resumed, 0.1, signal);
      expect(ids).toHaveLength(2);
      expect(ids[0]).not.toBe(ids[1]);
      expect(ids.every((id) => id.startsWith('run:'))).toBe(true);
    } finally {
      dead.close();
      resumed.close();
    }
  });

  it('a call refused while another settles goes once the settlement lands, never a spurious stop', async () => {
    const ledger = memoryLedger();
    let releaseSettle!: () => void;
    const slowSettle: PoolLedger = {
      ...ledger,
      settle: async (w, id, amount) => {
        if (amount > 0) await new Promise<void>((r) => (releaseSettle = r));
        return ledger.settle(w, id, amount);
      },
    };
    const pools = new SpendPools(org, slowSettle, 'store', 'run', explain);
    try {
      const signal = new AbortController().signal;
      const settleFirst = await reserve(pools, 0.8, signal);
      const settling = settleFirst(0.1);
      // The first call's settlement is on its way to the store: the second must not take the pool for empty of calls.
      const second = reserve(pools, 0.8, signal);
      await new Promise((r) => setTimeout(r, 20));
      releaseSettle();
      await settling;
      await expect(second).resolves.toBeTypeOf('function');
    } finally {
      pools.close();
    }
  });

  it("waits while other runs' holds fill the pool, and goes when they settle", async () => {
    const ledger = memoryLedger();
    const window = { pool: 'org', start: 0, keepMs: 1 };
    await ledger.reserve(window, 'other-run:1', 900_000, 1_000_000, 60_000);
    const pools = new SpendPools(org, ledger, 'store', 'run', explain);
    try {
      let granted = false;
      const waiting = reserve(pools, 0.5, new AbortController().signal).then(() => (granted = true));
      await new Promise((r) => setTimeout(r, 100));
      expect(granted, 'no stop while another run holds the room').toBe(false);
      await ledger.settle(window, 'other-run:1', 100_000);
      await waiting;
      expect(granted).toBe(true);
    } finally {
      pools.close();
    }
  });

  it('stops at the limit when what was spent leaves no room, whatever is held', async () => {
    const ledger = memoryLedger();
    const window = { pool: 'org', start: 0, keepMs: 1 };
    await ledger.reserve(window, 'other:1', 700_000, 1_000_000, 60_000);
    await ledger.settle(window, 'other:1', 700_000);
    const pools = new SpendPools(org, ledger, 'store', 'run', explain);
    try {
      await expect(reserve(pools, 0.5, new AbortController().signal)).rejects.toThrow(/^limit reached: spend_pool org \(\$0\.70 spent of \$1\.00 per day/);
    } finally {
      pools.close();
    }
  });

  it('a store that fails stops the call at the limit, and a paid call whose settlement failed is counted before the next hold', async () => {
    const ledger = memoryLedger();
    let down = false;
    const flaky: PoolLedger = {
      now: (...a) => (down ? Promise.reject(new Error('connection refused')) : ledger.now(...a)),
      reserve: (...a) => (down ? Promise.reject(new Error('connection refused')) : ledger.reserve(...a)),
      settle: (...a) => (down ? Promise.reject(new Error('connection refused')) : ledger.settle(...a)),
      renew: async () => {},
    };
    const pools = new SpendPools(org, flaky, 'redis://store', 'run', explain);
    try {
      const signal = new AbortController().signal;
      const settle = await reserve(pools, 0.5, signal);
      down = true;
      await settle(0.4);
      await expect(reserve(pools, 0.5, signal)).rejects.toThrow(
        'limit reached: spend_pool org cannot be checked: the --coordinate store redis://store failed (connection refused); resume once it answers',
      );
      down = false;
      // The store is back: the paid $0.40 is counted first, so $0.70 more does not fit.
      await expect(reserve(pools, 0.7, signal)).rejects.toThrow(/\$0\.40 spent of \$1\.00/);
    } finally {
      pools.close();
    }
  });
});

describe('a pool as written', () => {
  it('takes NAME=DOLLARS/WINDOW', () => {
    expect(poolSpec('org=200/day')).toEqual({ name: 'org', capUsd: 200, per: 'day' });
    expect(poolSpec(' repo.x_1-2=$20.5/12h ')).toEqual({ name: 'repo.x_1-2', capUsd: 20.5, per: '12h' });
    expect(poolSpec('a=1000000000/week')).toEqual({ name: 'a', capUsd: 1e9, per: 'week' });
    expect(poolSpec(`${'n'.repeat(64)}=0.01/month`).per).toBe('month');
    expect(poolSpec('b=3/7d').per).toBe('7d');
    expect(poolSpec('c=3/9999h').per).toBe('9999h');
  });

  it('refuses anything else, naming where it came from', () => {
    for (const bad of [
      'org=0/day',
      'org=1000000001/day',
      'org=1/fortnight',
      'org=1/0h',
      'org=1/10000h',
      'org=1/1w',
      'org/day',
      'org=1',
      `${'n'.repeat(65)}=1/day`,
      'o rg=1/day',
      'org=1.5.2/day',
      'org=-1/day',
      'org=.5/day',
    ]) {
      expect(() => poolSpec(bad), bad).toThrow(PoolSpecError);
    }
    expect(() => poolSpec('org=0/day')).toThrow(
      '--spend-pool takes NAME=DOLLARS/WINDOW, such as org=200/day or repo=20/12h (DOLLARS above 0, at most 1000000000; windows: hour, day, week, month, or a ' +
        'number of hours or days); got "org=0/day"',
    );
    expect(() => poolSpec('x', 'CONCLAVE_SPEND_POOLS')).toThrow(/^CONCLAVE_SPEND_POOLS takes NAME=DOLLARS\/WINDOW/);
  });

  it('windows begin at multiples of their length since 1970 (UTC), a month on its first day', () => {
    const at = Date.UTC(2024, 1, 29, 13, 45, 7); // a leap day, a Thursday
    const day = 86_400_000;
    expect(windowOf('day', at)).toEqual({ start: Date.UTC(2024, 1, 29), end: Date.UTC(2024, 2, 1) });
    expect(windowOf('hour', at)).toEqual({ start: Date.UTC(2024, 1, 29, 13), end: Date.UTC(2024, 1, 29, 14) });
    expect(windowOf('12h', at)).toEqual({ start: Date.UTC(2024, 1, 29, 12), end: Date.UTC(2024, 1, 30) });
    expect(windowOf('2d', at)).toEqual({ start: Math.floor(at / (2 * day)) * 2 * day, end: Math.floor(at / (2 * day)) * 2 * day + 2 * day });
    // 1970-01-01 was a Thursday: weeks run Thursday to Thursday.
    expect(windowOf('week', at)).toEqual({ start: Date.UTC(2024, 1, 29), end: Date.UTC(2024, 2, 7) });
    expect(windowOf('month', at)).toEqual({ start: Date.UTC(2024, 1, 1), end: Date.UTC(2024, 2, 1) });
    expect(windowOf('month', Date.UTC(2024, 11, 31, 23))).toEqual({ start: Date.UTC(2024, 11, 1), end: Date.UTC(2025, 0, 1) });
    for (const bad of ['fortnight', '0h', '10000h', '3w', 'h', '12', '12hh', 'x12h']) expect(windowOf(bad, at), bad).toBeUndefined();
  });
});

describe("a pool's holds in the store", () => {
  const explain = (e: unknown) => (e instanceof Error ? e.message : String(e));

  it("asks the store's clock for the window, holds in whole millionths rounded up, under ids of its own", async () => {
    const ledger = memoryLedger();
    const seen: { w: PoolWindow; id: string; amount: number; cap: number; holdMs: number }[] = [];
    const storeNow = Date.UTC(2026, 2, 15, 10, 30);
    const recording: PoolLedger = {
      ...ledger,
      now: async () => storeNow,
      reserve: (w, id, amount, cap, holdMs) => (seen.push({ w, id, amount, cap, holdMs }), ledger.reserve(w, id, amount, cap, holdMs)),
    };
    const pools = new SpendPools([{ name: 'org', capUsd: 2.5, per: 'day' }], recording, 'store', 'run-7', explain);
    try {
      await reserve(pools, 0.0000001, new AbortController().signal);
      await reserve(pools, 0.25, new AbortController().signal);
      expect(seen.map((s) => ({ ...s, id: s.id.replace(/:[0-9a-f]{8}:/, ':H:') }))).toEqual([
        { w: { pool: 'org', start: Date.UTC(2026, 2, 15), keepMs: 86_400_000 + 60_000 }, id: 'run-7:H:1', amount: 1, cap: 2_500_000, holdMs: 60_000 },
        { w: { pool: 'org', start: Date.UTC(2026, 2, 15), keepMs: 86_400_000 + 60_000 }, id: 'run-7:H:2', amount: 250_000, cap: 2_500_000, holdMs: 60_000 },
      ]);
    } finally {
      pools.close();
    }
  });

  it('a call no pool but the second has room for gives back its hold in the first, and the refusal says what the second holds', async () => {
    const org = memoryLedger();
    const settled: [string, string, number][] = [];
    const ledgers: Record<string, PoolLedger> = { org, team: memoryLedger() };
    const byPool: PoolLedger = {
      now: async () => Date.UTC(2026, 2, 15, 10),
      reserve: (w, ...rest) => ledgers[w.pool]!.reserve(w, ...rest),
      settle: (w, id, amount) => (settled.push([w.pool, id.split(':').pop()!, amount]), ledgers[w.pool]!.settle(w, id, amount)),
      renew: async () => {},
    };
    const window = { pool: 'team', start: 0, keepMs: 1 };
    await ledgers.team!.reserve(window, 'x', 700_000, 1_000_000, 60_000);
    await ledgers.team!.settle(window, 'x', 700_000);
    await ledgers.team!.reserve(window, 'y', 100_000, 1_000_000, 60_000);
    const specs = [
      { name: 'org', capUsd: 10, per: 'day' },
      { name: 'team', capUsd: 1, per: 'day' },
    ];
    const pools = new SpendPools(specs, byPool, 'store', 'run', explain);
    try {
      await expect(reserve(pools, 0.5, new AbortController().signal)).rejects.toThrow(
        'limit reached: spend_pool team ($0.70 spent and $0.10 held by calls in flight of $1.00 per day: $0.20 left, and the next call could cost up to ' +
          '$0.50; the pool has room again at 2026-03-16T00:00:00.000Z, or sooner if calls in flight cost less than they hold)',
      );
      expect(settled).toEqual([['org', '1', 0]]);
      expect(await org.reserve(window, 'z', 10_000_000, 10_000_000, 1)).toMatchObject({ granted: true });
      await org.settle(window, 'z', 0);
      // Spent past the cap (another run's late settlement): nothing is left, never less than nothing.
      await ledgers.team!.settle(window, 'y', 400_000);
      await expect(reserve(pools, 0.01, new AbortController().signal)).rejects.toThrow('($1.10 spent of $1.00 per day: $0.00 left');
    } finally {
      pools.close();
    }
  });

  it("waits for its own calls' settlements, and looks again each second for others'", async () => {
    const ledger = memoryLedger();
    const pools = new SpendPools([{ name: 'org', capUsd: 1, per: 'day' }], ledger, 'store', 'run', explain);
    try {
      const settle = await reserve(pools, 0.6, new AbortController().signal);
      expect(await pools.hold({ usd: 0.6, tokens: 0 })).toEqual({ wait: 'settle' });
      await settle(0.1);
      const window = { pool: 'org', start: 0, keepMs: 1 };
      await ledger.reserve(window, 'other', 800_000, 1_000_000, 60_000);
      expect(await pools.hold({ usd: 0.2, tokens: 0 })).toEqual({ wait: 1_000 });
    } finally {
      pools.close();
    }
  });

  it('an amount the store gives that is no amount stops the run as refused, naming the pool', async () => {
    for (const [spent, held] of [
      [-1, 0],
      [Number.NaN, 0],
      [0, 1.5],
      [1e15 + 1, 0],
      [0, 2 ** 53],
    ]) {
      const ledger: PoolLedger = { ...memoryLedger(), reserve: async () => ({ granted: true, spent: spent!, held: held! }) };
      const pools = new SpendPools([{ name: 'org', capUsd: 1, per: 'day' }], ledger, 'store', 'run', explain);
      try {
        const refused = await reserve(pools, 0.1, new AbortController().signal).catch((e: unknown) => e);
        expect(refused, `${spent} ${held}`).toBeInstanceOf(PoolValueError);
        expect((refused as Error).message).toMatch(
          /^the spend pool org in the store says \S+ millionths of a dollar (spent|held), which is no amount a pool holds: fix or delete the pool's keys, then resume$/,
        );
      } finally {
        pools.close();
      }
    }
    const atMost: PoolLedger = { ...memoryLedger(), reserve: async () => ({ granted: true, spent: 1e15, held: 0 }) };
    const fine = new SpendPools([{ name: 'org', capUsd: 1, per: 'day' }], atMost, 'store', 'run', explain);
    await expect(reserve(fine, 0.1, new AbortController().signal)).resolves.toBeTypeOf('function');
    fine.close();
  });

  it('a store whose keys hold what is no amount is refused, not taken for a store that is down', async () => {
    for (const why of ['CONCLAVE_BAD_VALUE spent is abc', 'WRONGTYPE Operation against a key', 'value is not an integer or out of range']) {
      const ledger: PoolLedger = { ...memoryLedger(), reserve: () => Promise.reject(new Error(why)) };
      const pools = new SpendPools(
        [
          { name: 'org', capUsd: 1, per: 'day' },
          { name: 'b', capUsd: 1, per: 'day' },
        ],
        ledger,
        'redis://s',
        'run',
        explain,
      );
      try {
        const refused = await reserve(pools, 0.1, new AbortController().signal).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(PoolValueError);
        expect((refused as Error).message).toBe(
          `the spend pools in the --coordinate store redis://s hold something that is not an amount (${why}): fix or delete the pool's keys, then resume`,
        );
      } finally {
        pools.close();
      }
    }
    const down: PoolLedger = { ...memoryLedger(), now: () => Promise.reject(new Error('ECONNREFUSED')) };
    const pools = new SpendPools(
      [
        { name: 'org', capUsd: 1, per: 'day' },
        { name: 'b', capUsd: 1, per: 'day' },
      ],
      down,
      'redis://s',
      'run',
      explain,
    );
    await expect(reserve(pools, 0.1, new AbortController().signal)).rejects.toThrow(
      'limit reached: spend_pool org, b cannot be checked: the --coordinate store redis://s failed (ECONNREFUSED); resume once it answers',
    );
    pools.close();
  });

  it('settlements the store missed are sent once each, in order, before the next hold', async () => {
    const ledger = memoryLedger();
    const sent: number[] = [];
    let down = true;
    const flaky: PoolLedger = {
      ...ledger,
      settle: async (w, id, amount) => {
        if (down) throw new Error('down');
        sent.push(amount);
        return ledger.settle(w, id, amount);
      },
    };
    const pools = new SpendPools([{ name: 'org', capUsd: 10, per: 'day' }], flaky, 'store', 'run', explain);
    try {
      const [a, b] = [await reserve(pools, 1, new AbortController().signal), await reserve(pools, 1, new AbortController().signal)];
      await Promise.all([a(0.3), b(0.4)]);
      down = false;
      await Promise.all([reserve(pools, 1, new AbortController().signal), reserve(pools, 1, new AbortController().signal)]);
      expect(sent).toEqual([300_000, 400_000]);
    } finally {
      pools.close();
    }
  });

  it('renews the holds of its calls in flight every 20 s, one request per window, until they settle', async () => {
    vi.useFakeTimers({ now: Date.UTC(2026, 2, 15, 10) });
    const ledger = memoryLedger();
    const renewed: [string, string[], number][] = [];
    const watching: PoolLedger = { ...ledger, renew: async (w, ids, holdMs) => void renewed.push([w.pool, ids.map((id) => id.split(':').pop()!), holdMs]) };
    const pools = new SpendPools(
      [
        { name: 'org', capUsd: 10, per: 'day' },
        { name: 'team', capUsd: 10, per: 'day' },
      ],
      watching,
      'store',
      'run',
      explain,
    );
    try {
      await vi.advanceTimersByTimeAsync(20_000);
      expect(renewed).toEqual([]);
      const a = await reserve(pools, 1, new AbortController().signal);
      await reserve(pools, 1, new AbortController().signal);
      await vi.advanceTimersByTimeAsync(19_000);
      expect(renewed).toEqual([]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(renewed).toEqual([
        ['org', ['1', '2'], 60_000],
        ['team', ['1', '2'], 60_000],
      ]);
      await a(0.5);
      renewed.length = 0;
      await vi.advanceTimersByTimeAsync(20_000);
      expect(renewed).toEqual([
        ['org', ['2'], 60_000],
        ['team', ['2'], 60_000],
      ]);
      pools.close();
      renewed.length = 0;
      await vi.advanceTimersByTimeAsync(60_000);
      expect(renewed).toEqual([]);
    } finally {
      pools.close();
      vi.useRealTimers();
    }
  });
});
