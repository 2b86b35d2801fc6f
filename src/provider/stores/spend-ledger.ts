import type { Pool } from 'pg';
import { PG_NOW_MS, pgCreateTables, pgLocked, REDIS_NOW, type PgQuery, type RedisScripts } from './store-atomic.js';

/** One window of one spend pool: `org` for the UTC day that began at `start`. Amounts are in millionths of a dollar. */
export interface PoolWindow {
  pool: string;
  start: number;
  /** How long after `start` the window's records may be dropped. */
  keepMs: number;
}

/** What a window holds: spent (calls that ended) and held (calls in flight, at their worst case). */
export interface Standing {
  spent: number;
  held: number;
}

/**
 * A store's record of spend pools (docs/organisation.md: spend pools). Each operation is atomic
 * in the store, so runners racing for the last dollars of a pool cannot both get them. Every time
 * is the store's own (Redis `TIME`, PostgreSQL `clock_timestamp()`): runners whose clocks disagree
 * agree on when a hold expires and which window a call falls in.
 */
export interface PoolLedger {
  /** The store's clock, in milliseconds since 1970. */
  now(): Promise<number>;
  /**
   * Holds `amount` for `id` for `holdMs` when spent + held + amount fits `cap`; holds that
   * expired (a runner that died) are dropped first. Says what the window held before.
   */
  reserve(w: PoolWindow, id: string, amount: number, cap: number, holdMs: number): Promise<Standing & { granted: boolean }>;
  /** Ends `id`'s hold and adds what the call really cost to what was spent. */
  settle(w: PoolWindow, id: string, amount: number): Promise<void>;
  /** Keeps these holds for `holdMs` more: a living runner's calls in flight. */
  renew(w: PoolWindow, ids: readonly string[], holdMs: number): Promise<void>;
}

/** A stored amount, or an error that says it is none (text, NaN, inf, a number past what a double holds exactly). */
const AMOUNT = `
local function amount(value, what)
  if not value then return 0 end
  if type(value) ~= 'string' or not string.match(value, '^%d+$') or string.len(value) > 15 then
    error({err = 'CONCLAVE_BAD_VALUE ' .. what .. ' is ' .. string.sub(tostring(value), 1, 40)})
  end
  return tonumber(value)
end`;

const RESERVE = `${AMOUNT}${REDIS_NOW}
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(expired) do redis.call('HDEL', KEYS[3], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local held = 0
for _, value in ipairs(redis.call('HVALS', KEYS[3])) do held = held + amount(value, 'a hold') end
local spent = amount(redis.call('GET', KEYS[1]), 'spent')
if spent + held + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return {0, spent, held} end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], math.max(1, tonumber(ARGV[5]) - now)) end
return {1, spent, held}`;

const SETTLE = `${AMOUNT}${REDIS_NOW}
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
local spent = amount(redis.call('GET', KEYS[1]), 'spent')
redis.call('SET', KEYS[1], tostring(spent + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(ARGV[3]) - now))`;

const RENEW = `${REDIS_NOW}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i]) end
end`;

const TIME = `${REDIS_NOW}
return now`;

/** Spend pools in Redis: per window a counter of what was spent, and the holds (a sorted set by expiry, and their amounts). */
export class RedisLedger implements PoolLedger {
  constructor(private readonly client: RedisScripts) {}

  async now(): Promise<number> {
    return Number(await this.eval(TIME, [], []));
  }

  async reserve(w: PoolWindow, id: string, amount: number, cap: number, holdMs: number): Promise<Standing & { granted: boolean }> {
    const reply = (await this.eval(RESERVE, keysOf(w), [id, String(amount), String(cap), String(holdMs), String(w.start + w.keepMs)])) as number[];
    return { granted: Number(reply[0]) === 1, spent: Number(reply[1]), held: Number(reply[2]) };
  }

  async settle(w: PoolWindow, id: string, amount: number): Promise<void> {
    await this.eval(SETTLE, keysOf(w), [id, String(amount), String(w.start + w.keepMs)]);
  }

  async renew(w: PoolWindow, ids: readonly string[], holdMs: number): Promise<void> {
    if (ids.length > 0) await this.eval(RENEW, [keysOf(w)[1]!], [String(holdMs), ...ids]);
  }

  private eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    return this.client.eval(script, { keys, arguments: args });
  }
}

function keysOf(w: PoolWindow): string[] {
  const base = `conclave:pool:${w.pool}:${w.start}`;
  return [`${base}:spent`, `${base}:holds`, `${base}:amounts`];
}

/** Spend pools in PostgreSQL: a row per window with what was spent, a row per hold; a window's operations serialised by an advisory lock. */
export class PostgresLedger implements PoolLedger {
  constructor(private readonly pool: Pool) {}

  /** Makes the two tables, if no runner has yet. */
  prepare(): Promise<void> {
    return pgCreateTables(this.pool, {
      conclave_spend: 'pool text NOT NULL, window_start bigint NOT NULL, spent bigint NOT NULL DEFAULT 0, PRIMARY KEY (pool, window_start)',
      // A hold is its call's in one window of one pool: a call draws from several pools under one id.
      conclave_pool_holds:
        'id text NOT NULL, pool text NOT NULL, window_start bigint NOT NULL, amount bigint NOT NULL, expires_at bigint NOT NULL, ' +
        'PRIMARY KEY (id, pool, window_start)',
    });
  }

  async now(): Promise<number> {
    return Number((await this.pool.query(`SELECT ${PG_NOW_MS} AS now`)).rows[0]?.now);
  }

  reserve(w: PoolWindow, id: string, amount: number, cap: number, holdMs: number): Promise<Standing & { granted: boolean }> {
    return this.locked(w, async (query) => {
      await query(`DELETE FROM conclave_pool_holds WHERE pool = $1 AND window_start = $2 AND expires_at <= ${PG_NOW_MS}`, [w.pool, w.start]);
      const held = Number(
        (await query('SELECT coalesce(sum(amount), 0) AS held FROM conclave_pool_holds WHERE pool = $1 AND window_start = $2', [w.pool, w.start])).rows[0]
          ?.held ?? 0,
      );
      const spent = Number((await query('SELECT spent FROM conclave_spend WHERE pool = $1 AND window_start = $2', [w.pool, w.start])).rows[0]?.spent ?? 0);
      const granted = spent + held + amount <= cap;
      if (granted) {
        await query(
          `INSERT INTO conclave_pool_holds VALUES ($1, $2, $3, $4, ${PG_NOW_MS} + $5) ON CONFLICT (id, pool, window_start) DO UPDATE SET amount = ` +
            `EXCLUDED.amount, expires_at = EXCLUDED.expires_at`,
          [id, w.pool, w.start, amount, holdMs],
        );
      }
      return { granted, spent, held };
    });
  }

  settle(w: PoolWindow, id: string, amount: number): Promise<void> {
    return this.locked(w, async (query) => {
      await query('DELETE FROM conclave_pool_holds WHERE id = $1 AND pool = $2 AND window_start = $3', [id, w.pool, w.start]);
      await query('INSERT INTO conclave_spend VALUES ($1, $2, $3) ON CONFLICT (pool, window_start) DO UPDATE SET spent = conclave_spend.spent + $3', [
        w.pool,
        w.start,
        amount,
      ]);
    });
  }

  async renew(w: PoolWindow, ids: readonly string[], holdMs: number): Promise<void> {
    if (ids.length > 0)
      await this.pool.query(`UPDATE conclave_pool_holds SET expires_at = ${PG_NOW_MS} + $1 WHERE pool = $2 AND window_start = $3 AND id = ANY($4)`, [
        holdMs,
        w.pool,
        w.start,
        ids,
      ]);
  }

  private locked<T>(w: PoolWindow, work: (query: PgQuery) => Promise<T>): Promise<T> {
    return pgLocked(this.pool, `conclave:pool:${w.pool}:${w.start}`, work);
  }
}
