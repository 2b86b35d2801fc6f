import type { Pool } from 'pg';
import { limitStep, type LimitOp, type LimitSize } from '../rates/limit-share.js';
import type { LimitKeeper } from '../rates/rate-limiters.js';
import { PG_NOW_MS, pgCreateTables, pgLocked, REDIS_NOW, type RedisScripts } from './store-atomic.js';

/**
 * limitStep (limit-share.ts) as one Redis script: atomic, on the store's clock. A record that is
 * not one (another tool's, hand-edited) is taken as a limit nothing has used; a key of another
 * type is the store's error.
 */
const STEP = `${REDIS_NOW}
local size, ms, window, op = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4]
local wanted, ago = math.max(0, math.ceil(tonumber(ARGV[5]))), math.min(math.max(0, tonumber(ARGV[6])), 60000)
local points = math.min(wanted, size)
local raw = redis.call('GET', KEYS[1])
local ok, state = pcall(cjson.decode, raw or 'null')
if not ok or type(state) ~= 'table' then state = {} end
local function entries(list, since)
  local valid = {}
  if type(list) == 'table' then
    for _, e in ipairs(list) do
      if type(e) == 'table' and type(e[1]) == 'number' and type(e[2]) == 'number' and e[2] > 0 and e[1] > since and e[1] <= now then
        valid[#valid + 1] = {e[1], e[2]}
      end
    end
  end
  return valid
end
local early = entries(state.early, now - 60000)
local wait = 0
if op == 'early' then
  early[#early + 1] = {now - ago, wanted}
  state.early = early
elseif window then
  if type(state.ms) == 'number' and state.ms > 0 and state.ms <= 60000 then ms = math.max(ms, state.ms) end
  local log, used = entries(state.log, now - ms), 0
  for _, e in ipairs(entries(early, now - ms)) do log[#log + 1] = e end
  table.sort(log, function(x, y) return x[1] < y[1] end)
  for _, e in ipairs(log) do used = used + e[2] end
  if op == 'take' and used + points <= size then
    log[#log + 1] = {now, points}
  elseif op == 'give' then
    for i = #log, 1, -1 do
      if points <= 0 then break end
      local back = math.min(points, log[i][2])
      log[i][2] = log[i][2] - back
      points = points - back
      if log[i][2] <= 0 then table.remove(log, i) end
    end
  else
    local over = used + points - size
    wait = 1
    for _, e in ipairs(log) do
      over = over - e[2]
      if over <= 0 then wait = math.max(1, e[1] + ms - now) break end
    end
  end
  state = {log = log}
  if #log > 0 then state.ms = ms end
else
  local tokens, at = state.tokens, state.at
  if type(tokens) ~= 'number' or type(at) ~= 'number' or tokens ~= tokens or at ~= at or math.abs(tokens) == math.huge or math.abs(at) == math.huge then
    tokens, at = size, now
  end
  tokens = math.min(size, math.max(0, tokens))
  at = math.min(at, now)
  local owed = 0
  for _, e in ipairs(entries(early, now - ms)) do owed = owed + e[2] end
  tokens = math.max(0, math.min(size, tokens + (math.max(0, now - at) * size) / ms) - owed)
  if op == 'give' then
    tokens = math.min(size, tokens + points)
  elseif tokens >= points then
    tokens = tokens - points
  else
    wait = math.max(1, math.ceil(((points - tokens) * ms) / size))
  end
  state = {tokens = tokens, at = now}
end
redis.call('SET', KEYS[1], cjson.encode(state), 'PX', math.ceil(2 * math.max(ms, 60000)) + 1000)
return wait`;

const prefix = (key: string) => `conclave:limit:${key}`;

/** Limits kept in Redis, one record per key (a bucket's level, or a window's log) that expires once nothing in it counts. */
export class RedisLimitKeeper implements LimitKeeper {
  constructor(private readonly client: RedisScripts) {}

  async apply(key: string, size: LimitSize, op: LimitOp, points: number, agoMs = 0): Promise<number> {
    const args = [String(size.points), String(size.ms), size.window ? '1' : '0', op, String(points), String(agoMs)];
    return Number(await this.client.eval(STEP, { keys: [prefix(key)], arguments: args }));
  }
}

const TABLE = 'conclave_limits';

/** Limits kept in PostgreSQL: a row per key with its state, each operation under the key's advisory lock. */
export class PostgresLimitKeeper implements LimitKeeper {
  constructor(private readonly pool: Pool) {}

  /** Makes the table, if no runner has yet. */
  prepare(): Promise<void> {
    return pgCreateTables(this.pool, { [TABLE]: 'key text PRIMARY KEY, state jsonb NOT NULL' });
  }

  apply(key: string, size: LimitSize, op: LimitOp, points: number, agoMs = 0): Promise<number> {
    return pgLocked(this.pool, prefix(key), async (query) => {
      // One row always: the server's time, and the key's state or null.
      const row = (await query(`SELECT ${PG_NOW_MS} AS now, (SELECT state FROM ${TABLE} WHERE key = $1) AS state`, [key])).rows[0]!;
      const { state, waitMs } = limitStep(row.state, size, op, points, Number(row.now), agoMs);
      await query(`INSERT INTO ${TABLE} VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET state = $2`, [key, JSON.stringify(state)]);
      return waitMs;
    });
  }
}
