import type { Pool } from 'pg';

/**
 * What the shared store's records (the spend ledger, the limits) are kept with: the store's own
 * clock, so that runners whose clocks disagree agree on time, and in PostgreSQL one lock per
 * record, so that runners racing for it take turns.
 */

/** The store's time in a Redis script: Redis gives seconds and microseconds. */
export const REDIS_NOW = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)`;

/** What the keepers need of a node-redis client: its scripts. */
export interface RedisScripts {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** The server's time in milliseconds: `clock_timestamp()`, not `now()`, which stays at the transaction's start. */
export const PG_NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

export type PgQuery = (text: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

/**
 * Makes those of a store's tables (name → columns) that do not exist yet. Only a missing table is
 * created: PostgreSQL refuses even CREATE TABLE IF NOT EXISTS to a role without the right to create
 * tables, and a CI role may be given only the use of tables an owner made. Runners that start
 * together take turns under one lock: without it, the loser of two creates fails on the table's type.
 */
export function pgCreateTables(pool: Pool, tables: Readonly<Record<string, string>>): Promise<void> {
  return pgLocked(pool, 'conclave:tables', async (query) => {
    for (const [name, columns] of Object.entries(tables)) {
      // One row always: true or false.
      const { rows } = await query('SELECT to_regclass($1) IS NOT NULL AS made', [name]);
      if (rows[0]!.made !== true) await query(`CREATE TABLE IF NOT EXISTS ${name} (${columns})`, []);
    }
  });
}

/** `work` in one transaction that holds the advisory lock named `lock` until it ends. */
export async function pgLocked<T>(pool: Pool, lock: string, work: (query: PgQuery) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lock]);
    const result = await work((text, values) => client.query(text, values));
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}
