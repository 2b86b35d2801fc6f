import { UsageError } from '../../conclave-error.js';
import { Limiters, type LimiterStore } from '../rates/rate-limiters.js';
import { PostgresLimitKeeper, RedisLimitKeeper } from './store-limits.js';
import { shownSpec, withoutCredentials } from './store-url.js';
import { withinTime } from '../time-limit.js';
import { PostgresRunNotes, RedisRunNotes, type RunNotes } from './run-notes.js';
import { PostgresLedger, RedisLedger, type PoolLedger, type PoolWindow } from './spend-ledger.js';

/** --coordinate names no store conclave can use, or the store does not answer. */
export class CoordinateError extends UsageError {}

/** The store every runner of an organisation shares (docs/organisation.md): its limiters and its spend ledger. */
export interface Coordination {
  /** The URL as the user may see it (no password). */
  shown: string;
  /** The store's limiters (store-limits.ts). */
  limiters: LimiterStore;
  ledger: PoolLedger;
  /** Each run's newest generation (run-notes.ts). */
  runs: RunNotes;
  close(): Promise<void>;
}

/** How long the store may take to connect, or to answer one operation, before it is taken for dead. */
export const STORE_TIMEOUT_MS = 3_000;

/**
 * Connects to the --coordinate store (`named` as the user gave it: the flag, or CONCLAVE_COORDINATE) and proves it answers, before the run starts. The drivers
 * (node-redis, node-postgres) load only here. Each driver is set up to
 * fail rather than wait: no reconnecting, no offline queue, bounded connection and query times.
 */
export async function coordinate(url: string, named = '--coordinate'): Promise<Coordination> {
  const shown = shownSpec(url);
  const refuse = (e: unknown, what = 'does not answer'): never => {
    const why = e instanceof Error ? e.message : String(e);
    throw new CoordinateError(`${named} ${shown} ${what}: ${withoutCredentials(why, url)}`, { cause: e });
  };
  if (/^rediss?:\/\//.test(url)) {
    const { createClient } = await import('@redis/client');
    const client = createClient({ url, disableOfflineQueue: true, socket: { connectTimeout: STORE_TIMEOUT_MS, reconnectStrategy: false } });
    client.on('error', () => {}); // each failed command reports it
    await withTimeout(
      client.connect().then(() => client.ping()),
      'connect',
    ).catch(refuse);
    return proven(refuse, {
      shown,
      limiters: new Limiters(new RedisLimitKeeper(client), true),
      ledger: new RedisLedger(client),
      runs: new RedisRunNotes(client),
      // A client whose server went away is closed already (close() would throw).
      close: async () => {
        if (client.isOpen) await client.close().catch(() => {});
      },
    });
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      connectionString: url,
      max: 4,
      connectionTimeoutMillis: STORE_TIMEOUT_MS,
      query_timeout: STORE_TIMEOUT_MS,
      allowExitOnIdle: true,
    });
    pool.on('error', () => {}); // an idle connection that breaks; the next query reports it
    const ledger = new PostgresLedger(pool);
    const keeper = new PostgresLimitKeeper(pool);
    const runs = new PostgresRunNotes(pool);
    await withTimeout(
      keeper
        .prepare()
        .then(() => ledger.prepare())
        .then(() => runs.prepare()),
      'connect',
    ).catch(async (e: unknown) => {
      await pool.end().catch(() => {});
      // The server answered: this role may not make the tables that are missing.
      if ((e as { code?: unknown }).code === '42501')
        refuse(e, 'cannot make its tables (a role that may create tables makes them once; this one then needs only their use)');
      refuse(e);
    });
    return proven(refuse, {
      shown,
      limiters: new Limiters(keeper, true),
      ledger,
      runs,
      close: () => pool.end().catch(() => {}),
    });
  }
  throw new CoordinateError(`${named} takes a redis://, rediss://, postgres:// or postgresql:// URL; got ${shown}`);
}

/**
 * The store, once a limiter and the ledger have each done one harmless operation (nothing taken,
 * nothing held): a server that answers but cannot be used (no rights to make a table, a key of
 * another kind in the way) is refused before the run, not found out in the middle of it.
 */
async function proven(refuse: (e: unknown, what: string) => never, store: Coordination): Promise<Coordination> {
  const probe: PoolWindow = { pool: 'conclave-probe', start: 0, keepMs: 1 };
  const id = `probe:${process.pid}:${Date.now()}`;
  const use = async () => {
    await store.limiters.early('conclave-probe', 0, 0);
    await store.ledger.now();
    await store.ledger.reserve(probe, id, 0, 1, 1_000);
    await store.ledger.settle(probe, id, 0);
    await store.runs.noted('conclave-probe');
  };
  try {
    await withTimeout(use(), 'a first use');
  } catch (e) {
    await store.close();
    refuse(e, 'answers but cannot be used');
  }
  return store;
}

/** `work`, or an error once STORE_TIMEOUT_MS has passed. */
export function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  return withinTime(work, STORE_TIMEOUT_MS, `no answer to ${what} in ${STORE_TIMEOUT_MS / 1000} s`);
}
