import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SpendPools } from '../../src/engine/spend-pools.js';
import type { PoolLedger, PoolWindow, Standing } from '../../src/provider/spend-ledger.js';

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

describe('spend pools', () => {
  it("wakes a call that waited for the run's own call to settle, and leaves no listener on its signal", async () => {
    const pools = new SpendPools([{ name: 'org', capUsd: 1, per: 'day' }], memoryLedger(), 'store', 'run', String);
    try {
      const agent = new AbortController();
      const settleFirst = await pools.reserve(0.8, agent.signal);
      let second: ((costUsd: number) => Promise<void>) | undefined;
      const waiting = pools.reserve(0.8, agent.signal).then((settle) => (second = settle));
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
      await dead.reserve(0.1, signal);
      await resumed.reserve(0.1, signal);
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
      const settleFirst = await pools.reserve(0.8, signal);
      const settling = settleFirst(0.1);
      // The first call's settlement is on its way to the store: the second must not take the pool for empty of calls.
      const second = pools.reserve(0.8, signal);
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
      const waiting = pools.reserve(0.5, new AbortController().signal).then(() => (granted = true));
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
      await expect(pools.reserve(0.5, new AbortController().signal)).rejects.toThrow(/^limit reached: spend_pool org \(\$0\.70 spent of \$1\.00 per day/);
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
      const settle = await pools.reserve(0.5, signal);
      down = true;
      await settle(0.4);
      await expect(pools.reserve(0.5, signal)).rejects.toThrow(
        'limit reached: spend_pool org cannot be checked: the --coordinate store redis://store failed (connection refused); resume once it answers',
      );
      down = false;
      // The store is back: the paid $0.40 is counted first, so $0.70 more does not fit.
      await expect(pools.reserve(0.7, signal)).rejects.toThrow(/\$0\.40 spent of \$1\.00/);
    } finally {
      pools.close();
    }
  });
});
