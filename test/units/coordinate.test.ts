import { createClient } from '@redis/client';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinate, CoordinateError, withTimeout, type Coordination } from '../../src/provider/stores/coordinate.js';
import { PostgresLedger, RedisLedger, type PoolLedger, type PoolWindow } from '../../src/provider/stores/spend-ledger.js';
import { PostgresLimitKeeper } from '../../src/provider/stores/store-limits.js';
import { freePort, missingStores, startPostgres, startRedis, type StoreServer } from '../helpers/stores.js';

/**
 * The --coordinate store and the spend ledger, from source, against real Redis and PostgreSQL
 * servers: what every runner of an organisation counts on (docs/organisation.md).
 */
const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the store tests must run here, but ${missing}`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(missing !== undefined)('the --coordinate store and its spend ledger', () => {
  let redis: StoreServer | undefined;
  let postgres: StoreServer | undefined;
  const stores: Record<string, Coordination> = {};

  beforeAll(async () => {
    redis = await startRedis({ password: 'redis-secret' });
    postgres = await startPostgres();
    stores.redis = await coordinate(redis.url);
    stores.postgres = await coordinate(postgres.url);
  }, 60_000);

  afterAll(async () => {
    for (const store of Object.values(stores)) await store.close();
    await redis?.kill();
    await postgres?.kill();
  });

  it('shows each store without its password', () => {
    expect(stores.redis!.shown).not.toContain('redis-secret');
    expect(stores.redis!.shown).toContain(`127.0.0.1:${redis!.port}`);
    expect(stores.postgres!.shown).not.toContain('cache-test-password');
  });

  it('refuses a URL of no store it knows, naming the flag or variable it came from', async () => {
    await expect(coordinate('memcached://x')).rejects.toThrow(
      new CoordinateError('--coordinate takes a redis://, rediss://, postgres:// or postgresql:// URL; got memcached://x'),
    );
    await expect(coordinate('http://x', 'CONCLAVE_COORDINATE')).rejects.toThrow(/^CONCLAVE_COORDINATE takes a redis:\/\//);
  });

  it('refuses a store that does not answer, or refuses its password, before the run, without the password', async () => {
    const port = await freePort();
    await expect(coordinate(`redis://127.0.0.1:${port}`, 'CONCLAVE_COORDINATE')).rejects.toThrow(
      new RegExp(`^CONCLAVE_COORDINATE redis://127\\.0\\.0\\.1:${port} does not answer: `),
    );
    const wrong = redis!.url.replace('redis-secret', 'not-the-secret');
    const refused = await coordinate(wrong).catch((e: Error) => e);
    expect(refused).toBeInstanceOf(CoordinateError);
    expect((refused as Error).message).toMatch(/^--coordinate redis:\/\/.*does not answer: /);
    expect((refused as Error).message).not.toContain('not-the-secret');
    const badPg = postgres!.url.replace('cache-test-password', 'wrong-password');
    const pgRefused = (await coordinate(badPg).catch((e: Error) => e)) as Error;
    expect(pgRefused.message).toMatch(/^--coordinate postgres:\/\/.* does not answer: /);
    expect(pgRefused.message).not.toContain('wrong-password');
  }, 30_000);

  it('PostgreSQL: a role that may not create the missing tables is told so, not that the store does not answer', async () => {
    const admin = new pg.Client({ connectionString: postgres!.url });
    await admin.connect();
    try {
      const database = `no_rights_${process.pid}`;
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.query("CREATE ROLE no_rights LOGIN PASSWORD 'no-rights-password'");
      const url = new URL(postgres!.url);
      url.pathname = `/${database}`;
      url.username = 'no_rights';
      url.password = 'no-rights-password';
      const refused = (await coordinate(url.toString()).catch((e: Error) => e)) as Error;
      expect(refused).toBeInstanceOf(CoordinateError);
      expect(refused.message).toMatch(
        /^--coordinate postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/no_rights_\d+ cannot make its tables \(a role that may create tables makes them once; this one then needs only their use\): permission denied for schema public$/,
      );
    } finally {
      await admin.end();
    }
  });

  it("a closed port is refused at once with the driver's reason, not retried until the timeout", async () => {
    const port = await freePort();
    const started = Date.now();
    const refused = (await coordinate(`redis://127.0.0.1:${port}`).catch((e: Error) => e)) as Error;
    expect(refused.message).toContain('ECONNREFUSED');
    expect(Date.now() - started, 'no reconnecting: the first refusal is the answer').toBeLessThan(2_500);
  });

  it('a Redis that asks for a password it was not given does not answer: said at connect, not at first use', async () => {
    const unauthenticated = redis!.url.replace(':redis-secret@', '');
    await expect(coordinate(unauthenticated)).rejects.toThrow(/^--coordinate redis:\/\/127\.0\.0\.1:\d+ does not answer: .*NOAUTH/);
  });

  it('a server that takes the connection and never answers is given up at the store timeout, saying what it waited for', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      await expect(coordinate(`redis://127.0.0.1:${port}`)).rejects.toThrow(`redis://127.0.0.1:${port} does not answer: no answer to connect in 3 s`);
    } finally {
      silent.close();
    }
  }, 15_000);

  it('a store that goes away after the check does not crash the process: what is asked of it next fails', async () => {
    const gone = await startRedis();
    const store = await coordinate(gone.url);
    await gone.kill();
    await sleep(200); // the client notices the closed socket and says so on its 'error' event
    await expect(store.ledger.now()).rejects.toThrow();
    await store.close();
    // PostgreSQL: the pool's idle connection is ended by the server; the pool makes another.
    const url = `${postgres!.url}${postgres!.url.includes('?') ? '&' : '?'}application_name=conclave-victim`;
    const pgStore = await coordinate(url);
    const admin = new pg.Client({ connectionString: postgres!.url });
    await admin.connect();
    try {
      await pgStore.ledger.now();
      const { rowCount } = await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'conclave-victim'");
      expect(rowCount).toBeGreaterThan(0);
      await sleep(200);
      expect(typeof (await pgStore.ledger.now())).toBe('number');
    } finally {
      await admin.end();
      await pgStore.close();
    }
  }, 30_000);

  it('refuses a Redis that answers but cannot be used: a key of another kind where the probe pool counts', async () => {
    const client = createClient({ url: redis!.url });
    await client.connect();
    try {
      await client.hSet('conclave:pool:conclave-probe:0:spent', 'x', '1');
      await expect(coordinate(redis!.url)).rejects.toThrow(/answers but cannot be used: .*WRONGTYPE/);
    } finally {
      await client.del('conclave:pool:conclave-probe:0:spent');
      await client.close();
    }
  });

  it("takes only URLs that begin with the scheme, and keeps the driver's error as the cause", async () => {
    await expect(coordinate(`x${redis!.url}`)).rejects.toThrow(/takes a redis:\/\/, rediss:\/\/, postgres:\/\/ or postgresql:\/\/ URL/);
    await expect(coordinate(`x${postgres!.url}`)).rejects.toThrow(/takes a redis:\/\/, rediss:\/\/, postgres:\/\/ or postgresql:\/\/ URL/);
    const refused = (await coordinate(`redis://127.0.0.1:${await freePort()}`).catch((e: unknown) => e)) as Error;
    expect(refused.cause).toBeInstanceOf(Error);
  });

  it("each store's limiters share one count across runners, and a closed store answers no more", async () => {
    for (const url of [redis!.url, postgres!.url]) {
      const [one, two] = [await coordinate(url), await coordinate(url)];
      try {
        const key = `unit-${Date.now()}`;
        expect(await one.limiters.limiter(key, { points: 2, ms: 60_000, window: false }).take(1)).toBe(0);
        expect(await two.limiters.limiter(key, { points: 2, ms: 60_000, window: false }).take(1)).toBe(0);
        expect(await one.limiters.limiter(key, { points: 2, ms: 60_000, window: false }).take(1)).toBeGreaterThan(0);
        expect(one.limiters.shared).toBe(true);
      } finally {
        await one.close();
        await two.close();
      }
      await expect(one.ledger.now()).rejects.toThrow();
    }
  }, 30_000);

  it('a second runner on PostgreSQL finds the tables made and goes on', async () => {
    const again = await coordinate(postgres!.url.replace('postgres://', 'postgresql://'));
    await again.close();
    await again.close();
  });

  it('gives up on an operation that does not answer within the store timeout', async () => {
    await expect(withTimeout(new Promise(() => {}), 'a test')).rejects.toThrow('no answer to a test in 3 s');
    await expect(withTimeout(Promise.resolve(7), 'a test')).resolves.toBe(7);
  }, 10_000);

  for (const kind of ['redis', 'postgres'] as const) {
    describe(`the spend ledger on ${kind}`, () => {
      let n = 0;
      /** A window of a pool of its own that began just now (a store drops a window's keys once it is over), so that tests never share one. */
      const windowOf = (): PoolWindow => ({ pool: `${kind}-test-${++n}`, start: Date.now() - n, keepMs: 3_600_000 });
      const ledger = (): PoolLedger => stores[kind]!.ledger;

      it("tells the store's time", async () => {
        const now = await ledger().now();
        expect(Math.abs(now - Date.now())).toBeLessThan(5_000);
        expect(Number.isInteger(now)).toBe(true);
      });

      it('holds what fits the cap exactly and refuses a millionth more, saying what was spent and held before', async () => {
        const w = windowOf();
        expect(await ledger().reserve(w, 'a', 600, 1_000, 60_000)).toEqual({ granted: true, spent: 0, held: 0 });
        expect(await ledger().reserve(w, 'b', 401, 1_000, 60_000)).toEqual({ granted: false, spent: 0, held: 600 });
        expect(await ledger().reserve(w, 'b', 400, 1_000, 60_000)).toEqual({ granted: true, spent: 0, held: 600 });
        await ledger().settle(w, 'a', 250);
        expect(await ledger().reserve(w, 'c', 350, 1_000, 60_000)).toEqual({ granted: true, spent: 250, held: 400 });
        expect(await ledger().reserve(w, 'd', 1, 1_000, 60_000)).toEqual({ granted: false, spent: 250, held: 750 });
        await ledger().settle(w, 'b', 0);
        await ledger().settle(w, 'c', 100);
        expect(await ledger().reserve(w, 'e', 0, 1_000, 60_000)).toEqual({ granted: true, spent: 350, held: 0 });
      });

      it('keeps windows and pools apart', async () => {
        const [w1, w2] = [windowOf(), windowOf()];
        await ledger().reserve(w1, 'a', 900, 1_000, 60_000);
        await ledger().settle(w1, 'a', 900);
        expect(await ledger().reserve(w2, 'a', 1_000, 1_000, 60_000)).toEqual({ granted: true, spent: 0, held: 0 });
        expect(await ledger().reserve({ ...w1, start: w1.start + 1 }, 'x', 1_000, 1_000, 60_000)).toMatchObject({ granted: true });
      });

      it('drops a hold its runner stopped renewing, and keeps one it renews', async () => {
        const w = windowOf();
        await ledger().reserve(w, 'dies', 500, 1_000, 300);
        await ledger().reserve(w, 'lives', 400, 1_000, 300);
        await ledger().renew(w, ['lives', 'never-held'], 60_000);
        await ledger().renew(w, [], 60_000);
        await sleep(600);
        expect(await ledger().reserve(w, 'next', 600, 1_000, 60_000)).toEqual({ granted: true, spent: 0, held: 400 });
        expect(await ledger().reserve(w, 'never-held', 1, 1_000, 60_000)).toEqual({ granted: false, spent: 0, held: 1_000 });
      });
    });
  }

  it('Redis: a pool amount that is no amount is an error that says so; the keys expire with the window', async () => {
    const client = createClient({ url: redis!.url });
    await client.connect();
    try {
      const now = await stores.redis!.ledger.now();
      const w: PoolWindow = { pool: 'typed', start: now - 1_000, keepMs: 20_000 };
      await stores.redis!.ledger.reserve(w, 'a', 5, 100, 60_000);
      const ttl = await client.pTTL(`conclave:pool:typed:${w.start}:holds`);
      expect(ttl).toBeGreaterThan(15_000);
      expect(ttl).toBeLessThanOrEqual(19_000);
      await stores.redis!.ledger.settle(w, 'a', 5);
      expect(await client.get(`conclave:pool:typed:${w.start}:spent`)).toBe('5');
      expect(await client.pTTL(`conclave:pool:typed:${w.start}:spent`)).toBeGreaterThan(15_000);
      for (const bad of ['abc', '1e9', '-5', '1234567890123456']) {
        await client.set(`conclave:pool:typed:${w.start}:spent`, bad);
        await expect(stores.redis!.ledger.reserve(w, 'b', 1, 100, 60_000)).rejects.toThrow(/CONCLAVE_BAD_VALUE spent is/);
      }
      await client.set(`conclave:pool:typed:${w.start}:spent`, '0');
      await client.hSet(`conclave:pool:typed:${w.start}:amounts`, 'x', 'NaN');
      await expect(stores.redis!.ledger.reserve(w, 'b', 1, 100, 60_000)).rejects.toThrow(/CONCLAVE_BAD_VALUE a hold is NaN/);
    } finally {
      await client.close();
    }
  });

  it('PostgreSQL: two runners racing for the last dollars of a pool cannot both get them', async () => {
    const w: PoolWindow = { pool: 'race', start: Date.now(), keepMs: 3_600_000 };
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => stores.postgres!.ledger.reserve(w, `r${i}`, 300, 1_000, 60_000)));
    expect(answers.filter((a) => a.granted)).toHaveLength(3);
    const client = new pg.Client({ connectionString: postgres!.url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT count(*)::int AS n FROM conclave_pool_holds WHERE pool = 'race'");
      expect(rows[0].n).toBe(3);
    } finally {
      await client.end();
    }
  });
});

describe('the spend ledgers, against drivers that fail', () => {
  it('PostgreSQL: only missing tables are made (a role may have only their use); one that cannot be made is an error, rolled back', async () => {
    for (const Keeper of [PostgresLedger, PostgresLimitKeeper]) {
      for (const made of [false, true]) {
        const said: string[] = [];
        let released = 0;
        const client = {
          query: async (text: string) => {
            said.push(text.split(' ')[0]!);
            if (text.startsWith('CREATE')) throw Object.assign(new Error('permission denied for schema public'), { code: '42501' });
            return { rows: text.includes('to_regclass') ? [{ made }] : [] };
          },
          release: () => void released++,
        };
        const prepared = new Keeper({ connect: async () => client } as never).prepare();
        if (made) {
          await prepared;
          const tables = Keeper === PostgresLedger ? 2 : 1;
          expect(said, `${Keeper.name}: its tables are there`).toEqual(['BEGIN', 'SELECT', ...Array<string>(tables).fill('SELECT'), 'COMMIT']);
        } else {
          await expect(prepared, Keeper.name).rejects.toThrow('permission denied');
          expect(said, Keeper.name).toEqual(['BEGIN', 'SELECT', 'SELECT', 'CREATE', 'ROLLBACK']);
        }
        expect(released).toBe(1);
      }
    }
  });

  it('PostgreSQL: an operation that fails is rolled back, and its connection given back', async () => {
    const said: string[] = [];
    let released = 0;
    const client = {
      query: async (text: string) => {
        said.push(text.split(' ')[0]!);
        if (text.startsWith('DELETE')) throw new Error('deadlock detected');
        return { rows: [] };
      },
      release: () => void released++,
    };
    const ledger = new PostgresLedger({ connect: async () => client } as never);
    await expect(ledger.settle({ pool: 'p', start: 0, keepMs: 1 }, 'id', 1)).rejects.toThrow('deadlock detected');
    expect(said).toEqual(['BEGIN', 'SELECT', 'DELETE', 'ROLLBACK']);
    expect(released).toBe(1);
  });

  it('renewing no holds asks the store nothing', async () => {
    let asked = 0;
    await new RedisLedger({ eval: async () => void asked++ }).renew({ pool: 'p', start: 0, keepMs: 1 }, [], 1_000);
    await new PostgresLedger({ query: async () => void asked++ } as never).renew({ pool: 'p', start: 0, keepMs: 1 }, [], 1_000);
    expect(asked).toBe(0);
  });
});
