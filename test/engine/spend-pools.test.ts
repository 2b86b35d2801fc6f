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
    const pools = new SpendPools([{ name: 'org', capUsd: 1, per: 'day' }], memoryLedger(), 'store', 'run', () => {});
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
