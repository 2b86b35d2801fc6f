import { describe, expect, it } from 'vitest';
import { FallbackLimiters, Limiters, localLimiters, type LimiterStore } from '../../src/provider/rate-limiters.js';

describe('the limiters (rate-limiter-flexible)', () => {
  it('takes points until the window is full, then says how long to wait, at most the window; a refused take takes nothing', async () => {
    const store = await localLimiters();
    expect(store.shared).toBe(false);
    const limiter = store.limiter('sonnet:requests', 2, 1);
    expect(store.limiter('sonnet:requests', 2, 1), 'one limiter per key and size').toBe(limiter);
    expect(await limiter.take(1)).toBe(0);
    expect(await limiter.take(1)).toBe(0);
    const wait = await limiter.take(1);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1_000);
    // The refused take gave its point back: one given back makes room for exactly one.
    await limiter.giveBack(1);
    expect(await limiter.take(1)).toBe(0);
    expect(await limiter.take(1)).toBeGreaterThan(0);
  });

  it('takes no more than the window holds (a call larger than the limit goes alone), and counts what was used before the limit was known', async () => {
    const store = await localLimiters();
    const big = store.limiter('opus:output_tokens', 4_000, 60);
    expect(await big.take(16_000), 'a call larger than the whole window still goes, alone').toBe(0);
    expect(await big.take(1)).toBeGreaterThan(0);
    const charged = store.limiter('haiku:requests', 3, 60);
    await charged.charge(2);
    expect(await charged.take(1)).toBe(0);
    expect(await charged.take(1)).toBeGreaterThan(0);
    // A charge and a give-back are capped at the window alike: together they leave it as it was (full).
    await charged.charge(50);
    await charged.giveBack(50);
    expect(await charged.take(1)).toBeGreaterThan(0);
    await charged.giveBack(1);
    expect(await charged.take(1)).toBe(0);
  });

  it('drops a record that never expires (set by hand, or by another tool) and asks again; a store error is an error', async () => {
    const calls: string[] = [];
    const made: unknown[] = [];
    let answer: unknown = { msBeforeNext: -1, remainingPoints: 0, consumedPoints: 5, isFirstInDuration: false };
    const store = new Limiters(
      (options) =>
        (made.push(options),
        {
          points: options.points,
          duration: options.duration,
          consume: async (key: string, n: number) => (calls.push(`consume ${key} ${n}`), Promise.reject(answer)),
          reward: async (key: string, n: number) => void calls.push(`reward ${key} ${n}`),
          penalty: async () => {},
          delete: async (key: string) => (calls.push(`delete ${key}`), true),
        }) as never,
      true,
    );
    const limiter = store.limiter('k', 5, 10);
    expect(made).toEqual([{ keyPrefix: 'conclave:rate', points: 5, duration: 10 }]);
    expect(await limiter.take(2)).toBe(1);
    expect(calls).toEqual(['consume k 2', 'delete k']);
    calls.length = 0;
    answer = { msBeforeNext: 86_400_000, remainingPoints: 0, consumedPoints: 7, isFirstInDuration: false };
    expect(await limiter.take(2), 'never longer than the window').toBe(10_000);
    expect(calls).toEqual(['consume k 2', 'reward k 2']);
    calls.length = 0;
    answer = { msBeforeNext: 0, remainingPoints: 0, consumedPoints: 7, isFirstInDuration: false };
    expect(await limiter.take(2), 'at least a millisecond').toBe(1);
    expect(calls, 'a window that ends now is no record to drop').toEqual(['consume k 2', 'reward k 2']);
    answer = new Error('READONLY the replica takes no writes');
    await expect(limiter.take(2)).rejects.toThrow(/READONLY/);
    // What is no refusal is the store's failure, whatever it looks like.
    for (const failure of [{ code: 'ECONNRESET' }, Object.assign(new Error('ETIMEDOUT'), { msBeforeNext: 5 }), null, { msBeforeNext: '5' }]) {
      answer = failure;
      await expect(limiter.take(2), JSON.stringify(failure)).rejects.toBe(failure);
    }
  });

  it('shared limits fall back to this process when the store fails: said once, and never unlimited', async () => {
    const failures: unknown[] = [];
    let down = false;
    let asked = 0;
    const sharedCalls: string[] = [];
    const refused = () => Promise.reject(new Error('ECONNREFUSED'));
    const shared: LimiterStore = {
      shared: true,
      limiter: () => ({
        take: async () => (asked++, down ? refused() : 0),
        giveBack: async (n) => (down ? refused() : void sharedCalls.push(`giveBack ${n}`)),
        charge: async (n) => (down ? refused() : void sharedCalls.push(`charge ${n}`)),
      }),
    };
    const store = new FallbackLimiters(
      shared,
      await localLimiters(),
      (work) => work,
      (e) => failures.push(e),
    );
    expect(store.shared).toBe(true);
    const limiter = store.limiter('sonnet:requests', 1, 60);
    expect(await limiter.take(1)).toBe(0);
    await limiter.giveBack(1);
    await limiter.charge(1);
    expect(sharedCalls, 'while it answers, the store keeps them all').toEqual(['giveBack 1', 'charge 1']);
    down = true;
    // Two calls that fail at once: the failure is said once.
    expect(await Promise.all([limiter.take(1), store.limiter('haiku:requests', 1, 60).take(1)]), 'the local limiters took them').toEqual([0, 0]);
    expect(await limiter.take(1), 'and holds the limit: one a minute').toBeGreaterThan(0);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toMatch(/ECONNREFUSED/);
    const before = asked;
    await store.limiter('opus:requests', 5, 60).take(1);
    expect(asked, 'the failed store is not asked again').toBe(before);
  });

  it('a store that does not answer in time counts as failed', async () => {
    const failures: unknown[] = [];
    const hanging: LimiterStore = {
      shared: true,
      limiter: () => ({ take: () => new Promise<number>(() => {}), giveBack: async () => {}, charge: async () => {} }),
    };
    const timeout = <T>(_work: Promise<T>, what: string) => Promise.reject<T>(new Error(`${what} did not answer`));
    const store = new FallbackLimiters(hanging, await localLimiters(), timeout, (e) => failures.push(e));
    expect(await store.limiter('k', 2, 1).take(1)).toBe(0);
    expect(String(failures[0])).toBe('Error: a rate limiter did not answer');
  });
});
