import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinate, type Coordination } from '../../src/provider/stores/coordinate.js';
import { missingStores, startPostgres, startRedis, type StoreServer } from '../helpers/stores.js';

/**
 * Each run's newest generation in the --coordinate store (provider/stores/run-notes.ts, docs/organisation.md:
 * runs), in a real Redis and a real PostgreSQL: never set back, and a stored value that is not a
 * note is no note. Through the CLI: test/e2e/organisation.test.ts.
 */
const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the store tests must run here, but ${missing}`);

describe.skipIf(missing !== undefined)('notes of runs in the shared store', () => {
  const servers: StoreServer[] = [];
  const stores: Record<string, Coordination> = {};
  beforeAll(async () => {
    const [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
    servers.push(redis, postgres);
    stores.redis = await coordinate(redis.url);
    stores.postgres = await coordinate(postgres.url);
  }, 60_000);
  afterAll(async () => {
    for (const store of Object.values(stores)) await store.close();
    await Promise.all(servers.map((s) => s.kill()));
  });

  it.each(['redis', 'postgres'])('%s: a run is noted, moved on, and never set back to an older generation', async (kind) => {
    const runs = stores[kind]!.runs;
    expect(await runs.noted('20261128T000000Z-aaaaaa')).toBeUndefined();
    await runs.note('20261128T000000Z-aaaaaa', { generation: 1, status: 'waiting', session: '/s/one.jsonl' });
    expect(await runs.noted('20261128T000000Z-aaaaaa')).toEqual({ generation: 1, status: 'waiting', session: '/s/one.jsonl' });
    await runs.note('20261128T000000Z-aaaaaa', { generation: 2, status: 'success', session: '/s/two.jsonl' });
    await runs.note('20261128T000000Z-aaaaaa', { generation: 1, status: 'waiting', session: '/s/old.jsonl' });
    expect(await runs.noted('20261128T000000Z-aaaaaa')).toEqual({ generation: 2, status: 'success', session: '/s/two.jsonl' });
    // The same generation noted again (a resume that parked again) takes the newer word.
    await runs.note('20261128T000000Z-aaaaaa', { generation: 2, status: 'stale', session: '/s/two.jsonl' });
    expect((await runs.noted('20261128T000000Z-aaaaaa'))?.status).toBe('stale');
    // Each run its own.
    expect(await runs.noted('20261128T000000Z-bbbbbb')).toBeUndefined();
  });

  it('redis: a key holding something else than a note is no note', async () => {
    const { createClient } = await import('@redis/client');
    const client = createClient({ url: servers[0]!.url });
    await client.connect();
    try {
      await client.hSet('conclave:run:forged', { generation: 'lots', status: 'success', session: '/s' });
      expect(await stores.redis!.runs.noted('forged')).toBeUndefined();
      await client.hSet('conclave:run:zero', { generation: '0', status: 'success', session: '/s' });
      expect(await stores.redis!.runs.noted('zero')).toBeUndefined();
      await client.hSet('conclave:run:half', { generation: '3' });
      expect(await stores.redis!.runs.noted('half')).toBeUndefined();
      // A note keeps for 90 days, then goes.
      await stores.redis!.runs.note('kept', { generation: 1, status: 'idle', session: '/s' });
      const ttl = await client.pTTL('conclave:run:kept');
      expect(ttl).toBeGreaterThan(89 * 24 * 3_600_000);
      expect(ttl).toBeLessThanOrEqual(90 * 24 * 3_600_000);
    } finally {
      await client.close();
    }
  });

  it('postgres: notes older than 90 days are dropped when a note is written', async () => {
    const pgModule = (await import('pg')).default;
    const client = new pgModule.Client({ connectionString: servers[1]!.url });
    await client.connect();
    try {
      await client.query("INSERT INTO conclave_runs VALUES ('ancient', 1, 'idle', '/s', now() - interval '91 days')");
      await client.query("INSERT INTO conclave_runs VALUES ('recent', 1, 'idle', '/s', now() - interval '89 days')");
      await stores.postgres!.runs.note('another', { generation: 1, status: 'idle', session: '/s' });
      expect(await stores.postgres!.runs.noted('ancient')).toBeUndefined();
      expect(await stores.postgres!.runs.noted('recent')).toEqual({ generation: 1, status: 'idle', session: '/s' });
    } finally {
      await client.end();
    }
  });
});
