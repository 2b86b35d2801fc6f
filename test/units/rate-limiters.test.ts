import { createClient } from '@redis/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FallbackLimiters, Limiters, localLimiters, MemoryLimitKeeper, type LimitKeeper, type LimiterStore } from '../../src/provider/rates/rate-limiters.js';
import { PostgresLedger } from '../../src/provider/stores/spend-ledger.js';
import { PostgresLimitKeeper, RedisLimitKeeper } from '../../src/provider/stores/store-limits.js';
import { missingStores, startPostgres, startRedis, type StoreServer } from '../helpers/stores.js';

/**
 * The limiters hand a limit out as the server keeps it (limit-share.ts): a bucket refilled
 * continuously, or a window whose points come back a window after they went; the same in this
 * process, in Redis (a script) and in PostgreSQL, on each keeper's clock.
 */
const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the store tests must run here, but ${missing}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const keepers: Record<string, LimitKeeper> = { memory: new MemoryLimitKeeper() };
let redis: StoreServer | undefined;
let postgres: StoreServer | undefined;
let redisClient: ReturnType<typeof createClient> | undefined;
let pool: pg.Pool | undefined;

beforeAll(async () => {
  if (missing) return;
  [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  redisClient = createClient({ url: redis.url });
  await redisClient.connect();
  pool = new pg.Pool({ connectionString: postgres.url });
  const kept = new PostgresLimitKeeper(pool);
  await kept.prepare();
  keepers.redis = new RedisLimitKeeper(redisClient);
  keepers.postgres = kept;
}, 60_000);

afterAll(async () => {
  await redisClient?.close();
  await pool?.end();
  await redis?.kill();
  await postgres?.kill();
});

const kinds = missing ? ['memory'] : ['memory', 'redis', 'postgres'];
let unique = 0;
const fresh = (kind: string) => ({ store: new Limiters(keepers[kind]!, kind !== 'memory'), key: `unit:${process.pid}:${++unique}` });

describe.each(kinds)('the limiters kept in %s', (kind) => {
  it('a bucket: its whole size at once, then one point per refill, the wait said to the millisecond; a refused take takes nothing', async () => {
    const { store, key } = fresh(kind);
    const limiter = store.limiter(key, { points: 4, ms: 2_000, window: false });
    for (let i = 0; i < 4; i++) expect(await limiter.take(1)).toBe(0);
    const wait = await limiter.take(1);
    expect(wait, 'a point comes back every 500 ms').toBeGreaterThan(400);
    expect(wait).toBeLessThanOrEqual(500);
    await limiter.giveBack(1);
    expect(await limiter.take(1), 'one given back makes room for one').toBe(0);
    expect(await limiter.take(1)).toBeGreaterThan(0);
    await sleep(wait + 20);
    expect(await limiter.take(1), 'refilled').toBe(0);
    expect(await limiter.take(16), 'a call larger than the limit waits for all of it, and goes alone').toBeGreaterThan(1_500);
  });

  it('a window: its points come back a window after each went, not all at once and not before', async () => {
    const { store, key } = fresh(kind);
    const limiter = store.limiter(key, { points: 3, ms: 1_000, window: true });
    expect(await limiter.take(1)).toBe(0);
    await sleep(300);
    expect(await limiter.take(2)).toBe(0);
    const wait = await limiter.take(1);
    expect(wait, 'the first point leaves 1 s after it went').toBeGreaterThan(600);
    expect(wait).toBeLessThanOrEqual(700);
    expect(await limiter.take(3), 'all three: when the last two leave').toBeGreaterThan(900);
    await sleep(wait + 20);
    expect(await limiter.take(1)).toBe(0);
    expect(await limiter.take(1), 'only the first came back').toBeGreaterThan(0);
    await limiter.giveBack(1);
    expect(await limiter.take(1), 'a point given back goes from the last taken').toBe(0);
  });

  it('what went before the size was known counts, whoever noted it; a window as long as the longest any runner learned', async () => {
    const { store, key } = fresh(kind);
    await store.early(key, 2, 0);
    await store.early(key, 1, 5_000);
    const runnerA = store.limiter(key, { points: 4, ms: 1_000, window: true });
    expect(await runnerA.take(2), 'two noted within the window, one long gone').toBe(0);
    expect(await runnerA.take(1)).toBeGreaterThan(0);
    // A runner that came later learned the window short: the longest asked with holds.
    const { key: other } = fresh(kind);
    expect(await store.limiter(other, { points: 1, ms: 1_500, window: true }).take(1)).toBe(0);
    expect(await store.limiter(other, { points: 1, ms: 300, window: true }).take(1)).toBeGreaterThan(1_000);
    const { key: bucket } = fresh(kind);
    await store.early(bucket, 3, 100);
    const b = store.limiter(bucket, { points: 4, ms: 4_000, window: false });
    expect(await b.take(1)).toBe(0);
    expect(await b.take(1), 'the bucket counted the three noted').toBeGreaterThan(0);
  });
});

describe.skipIf(missing !== undefined)('limits in a store as hostile as any input', () => {
  it('a record that is no limit (text, wrong numbers, the other shape) is taken as unused; a key of another type is an error', async () => {
    for (const [kind, write] of [
      ['redis', (key: string, value: string) => redisClient!.set(`conclave:limit:${key}`, value)],
      ['postgres', (key: string, value: string) => pool!.query('INSERT INTO conclave_limits VALUES ($1, $2::jsonb)', [key, value])],
    ] as const) {
      for (const [i, value] of [
        '"not a limit"',
        '{"tokens": "x", "at": 1}',
        '{"log": [[1, "a"], "x", null], "ms": -5}',
        '{"tokens": 1e308, "at": 9e15}',
      ].entries()) {
        const key = `hostile:${kind}:${i}:${Date.now()}`;
        await write(key, value);
        const store = new Limiters(keepers[kind]!, true);
        expect(await store.limiter(key, { points: 2, ms: 60_000, window: i % 2 === 0 }).take(2), `${kind} ${value}`).toBe(0);
        expect(await store.limiter(key, { points: 2, ms: 60_000, window: i % 2 === 0 }).take(1), `${kind} ${value}: then counted`).toBeGreaterThan(0);
      }
    }
    await redisClient!.lPush('conclave:limit:a-list', 'x');
    await expect(new Limiters(keepers.redis!, true).limiter('a-list', { points: 1, ms: 1_000, window: false }).take(1)).rejects.toThrow(/WRONGTYPE/);
  });

  it('PostgreSQL: runners racing to make the tables in a database without them are no error, and a limit is a row of it', async () => {
    for (let round = 0; round < 12; round++) {
      const database = `fresh_${process.pid}_${round}_${Date.now()}`;
      await pool!.query(`CREATE DATABASE ${database}`);
      const url = new URL(postgres!.url);
      url.pathname = `/${database}`;
      const fresh = new pg.Pool({ connectionString: url.toString(), max: 6 });
      try {
        // Every runner connected first, so that their CREATE TABLEs meet in the server.
        const clients = await Promise.all(Array.from({ length: 6 }, () => fresh.connect()));
        for (const client of clients) client.release();
        // Each runner makes the limits' table, then the ledger's, as `--coordinate` does.
        const runners = Array.from({ length: 6 }, () => new PostgresLimitKeeper(fresh));
        await Promise.all(runners.map((runner) => runner.prepare().then(() => new PostgresLedger(fresh).prepare())));
        const limiter = new Limiters(runners[0]!, true).limiter('sonnet:requests', { points: 2, ms: 60_000, window: true });
        expect(await limiter.take(2)).toBe(0);
        expect(await new Limiters(runners[1]!, true).limiter('sonnet:requests', { points: 2, ms: 60_000, window: true }).take(1)).toBeGreaterThan(0);
        const rows = (await fresh.query('SELECT key, state FROM conclave_limits')).rows;
        expect(rows, 'the limit lives in the database, not in this process').toEqual([
          { key: 'sonnet:requests', state: { log: [[expect.any(Number), 2]], ms: 60_000 } },
        ]);
      } finally {
        await fresh.end();
      }
    }
  }, 60_000);

  it('runners racing for the last points of one limit: no more than the limit goes', async () => {
    for (const kind of ['redis', 'postgres']) {
      const key = `race:${kind}:${Date.now()}`;
      const taken = await Promise.all(
        Array.from({ length: 20 }, () => new Limiters(keepers[kind]!, true).limiter(key, { points: 7, ms: 60_000, window: true }).take(1)),
      );
      expect(
        taken.filter((w) => w === 0),
        kind,
      ).toHaveLength(7);
    }
  });
});

describe('shared limits that fail', () => {
  it('fall back to this process when the store fails: said once, and never unlimited', async () => {
    const failures: unknown[] = [];
    let down = false;
    let asked = 0;
    const sharedCalls: string[] = [];
    const refused = () => Promise.reject(new Error('ECONNREFUSED'));
    const shared: LimiterStore = {
      shared: true,
      early: async (_key, n) => (down ? refused() : void sharedCalls.push(`early ${n}`)),
      limiter: () => ({
        take: async () => (asked++, down ? refused() : 0),
        giveBack: async (n) => (down ? refused() : void sharedCalls.push(`giveBack ${n}`)),
      }),
    };
    const store = new FallbackLimiters(
      shared,
      await localLimiters(),
      (work) => work,
      (e) => failures.push(e),
    );
    expect(store.shared).toBe(true);
    const limiter = store.limiter('sonnet:requests', { points: 1, ms: 60_000, window: false });
    expect(await limiter.take(1)).toBe(0);
    await limiter.giveBack(1);
    await store.early('sonnet:requests', 1, 0);
    expect(sharedCalls, 'while it answers, the store keeps them all').toEqual(['giveBack 1', 'early 1']);
    down = true;
    const haiku = store.limiter('haiku:requests', { points: 1, ms: 60_000, window: false });
    expect(await Promise.all([limiter.take(1), haiku.take(1)]), 'the local limiters took them').toEqual([0, 0]);
    expect(await limiter.take(1), 'and hold the limit: one a minute').toBeGreaterThan(0);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toMatch(/ECONNREFUSED/);
    const before = asked;
    await store.limiter('opus:requests', { points: 5, ms: 60_000, window: false }).take(1);
    expect(asked, 'the failed store is not asked again').toBe(before);
  });

  it('a store that does not answer in time counts as failed', async () => {
    const failures: unknown[] = [];
    const hanging: LimiterStore = {
      shared: true,
      early: () => new Promise<void>(() => {}),
      limiter: () => ({ take: () => new Promise<number>(() => {}), giveBack: async () => {} }),
    };
    const timeout = <T>(_work: Promise<T>, what: string) => Promise.reject<T>(new Error(`${what} did not answer`));
    const store = new FallbackLimiters(hanging, await localLimiters(), timeout, (e) => failures.push(e));
    expect(await store.limiter('k', { points: 2, ms: 1_000, window: false }).take(1)).toBe(0);
    expect(String(failures[0])).toBe('Error: a rate limiter did not answer');
  });
});
