import{o as e}from"./rolldown-runtime-Dlfrvzb7.js";import{pt as t}from"./workflow-DTfk06tg.js";import{A as n,It as r,k as i}from"./run-5xy2jzzf.js";import{o as a,s as o}from"./session-CQD05O_6.js";const s=`
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)`,c=`(extract(epoch from clock_timestamp()) * 1000)::bigint`;function l(e,t){return u(e,`conclave:tables`,async e=>{for(let[n,r]of Object.entries(t)){let{rows:t}=await e(`SELECT to_regclass($1) IS NOT NULL AS made`,[n]);t[0].made!==!0&&await e(`CREATE TABLE IF NOT EXISTS ${n} (${r})`,[])}})}async function u(e,t,n){let r=await e.connect();try{await r.query(`BEGIN`),await r.query(`SELECT pg_advisory_xact_lock(hashtext($1))`,[t]);let e=await n((e,t)=>r.query(e,t));return await r.query(`COMMIT`),e}catch(e){throw await r.query(`ROLLBACK`).catch(()=>{}),e}finally{r.release()}}const d=`${s}
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
return wait`,f=e=>`conclave:limit:${e}`;var p=class{client;constructor(e){this.client=e}async apply(e,t,n,r,i=0){let a=[String(t.points),String(t.ms),t.window?`1`:`0`,n,String(r),String(i)];return Number(await this.client.eval(d,{keys:[f(e)],arguments:a}))}};const m=`conclave_limits`;var h=class{pool;constructor(e){this.pool=e}prepare(){return l(this.pool,{[m]:`key text PRIMARY KEY, state jsonb NOT NULL`})}apply(e,t,r,i,a=0){return u(this.pool,f(e),async o=>{let s=(await o(`SELECT ${c} AS now, (SELECT state FROM ${m} WHERE key = $1) AS state`,[e])).rows[0],{state:l,waitMs:u}=n(s.state,t,r,i,Number(s.now),a);return await o(`INSERT INTO ${m} VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET state = $2`,[e,JSON.stringify(l)]),u})}},g=class{client;constructor(e){this.client=e}async note(e,t){await this.client.eval(`
local known = tonumber(redis.call('HGET', KEYS[1], 'generation') or '0') or 0
if known > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'generation', ARGV[1], 'status', ARGV[2], 'session', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`,{keys:[v(e)],arguments:[String(t.generation),t.status,t.session,`7776000000`]})}async noted(e){let[t,n,r]=await this.client.eval(`return redis.call('HMGET', KEYS[1], 'generation', 'status', 'session')`,{keys:[v(e)],arguments:[]});return y(t,n,r)}},_=class{pool;constructor(e){this.pool=e}prepare(){return l(this.pool,{conclave_runs:`run_id text PRIMARY KEY, generation integer NOT NULL, status text NOT NULL, session text NOT NULL, noted_at timestamptz NOT NULL`})}async note(e,t){await this.pool.query(`INSERT INTO conclave_runs VALUES ($1, $2, $3, $4, now()) ON CONFLICT (run_id) DO UPDATE SET generation = EXCLUDED.generation, status = EXCLUDED.status, session = EXCLUDED.session, noted_at = EXCLUDED.noted_at WHERE conclave_runs.generation <= EXCLUDED.generation`,[e,t.generation,t.status,t.session]),await this.pool.query(`DELETE FROM conclave_runs WHERE noted_at < now() - interval '90 days'`,[])}async noted(e){let t=(await this.pool.query(`SELECT generation, status, session FROM conclave_runs WHERE run_id = $1`,[e])).rows[0];return t?y(t.generation,t.status,t.session):void 0}};function v(e){return`conclave:run:${e}`}function y(e,t,n){let r=Number(e);if(!(!Number.isSafeInteger(r)||r<1||typeof t!=`string`||typeof n!=`string`))return{generation:r,status:t,session:n}}const b=`
local function amount(value, what)
  if not value then return 0 end
  if type(value) ~= 'string' or not string.match(value, '^%d+$') or string.len(value) > 15 then
    error({err = 'CONCLAVE_BAD_VALUE ' .. what .. ' is ' .. string.sub(tostring(value), 1, 40)})
  end
  return tonumber(value)
end`,x=`${b}${s}
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
return {1, spent, held}`,S=`${b}${s}
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
local spent = amount(redis.call('GET', KEYS[1]), 'spent')
redis.call('SET', KEYS[1], tostring(spent + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(ARGV[3]) - now))`,C=`${s}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i]) end
end`,w=`${s}
return now`;var T=class{client;constructor(e){this.client=e}async now(){return Number(await this.eval(w,[],[]))}async reserve(e,t,n,r,i){let a=await this.eval(x,E(e),[t,String(n),String(r),String(i),String(e.start+e.keepMs)]);return{granted:Number(a[0])===1,spent:Number(a[1]),held:Number(a[2])}}async settle(e,t,n){await this.eval(S,E(e),[t,String(n),String(e.start+e.keepMs)])}async renew(e,t,n){t.length>0&&await this.eval(C,[E(e)[1]],[String(n),...t])}eval(e,t,n){return this.client.eval(e,{keys:t,arguments:n})}};function E(e){let t=`conclave:pool:${e.pool}:${e.start}`;return[`${t}:spent`,`${t}:holds`,`${t}:amounts`]}var D=class{pool;constructor(e){this.pool=e}prepare(){return l(this.pool,{conclave_spend:`pool text NOT NULL, window_start bigint NOT NULL, spent bigint NOT NULL DEFAULT 0, PRIMARY KEY (pool, window_start)`,conclave_pool_holds:`id text NOT NULL, pool text NOT NULL, window_start bigint NOT NULL, amount bigint NOT NULL, expires_at bigint NOT NULL, PRIMARY KEY (id, pool, window_start)`})}async now(){return Number((await this.pool.query(`SELECT ${c} AS now`)).rows[0]?.now)}reserve(e,t,n,r,i){return this.locked(e,async a=>{await a(`DELETE FROM conclave_pool_holds WHERE pool = $1 AND window_start = $2 AND expires_at <= ${c}`,[e.pool,e.start]);let o=Number((await a(`SELECT coalesce(sum(amount), 0) AS held FROM conclave_pool_holds WHERE pool = $1 AND window_start = $2`,[e.pool,e.start])).rows[0]?.held??0),s=Number((await a(`SELECT spent FROM conclave_spend WHERE pool = $1 AND window_start = $2`,[e.pool,e.start])).rows[0]?.spent??0),l=s+o+n<=r;return l&&await a(`INSERT INTO conclave_pool_holds VALUES ($1, $2, $3, $4, ${c} + $5) ON CONFLICT (id, pool, window_start) DO UPDATE SET amount = EXCLUDED.amount, expires_at = EXCLUDED.expires_at`,[t,e.pool,e.start,n,i]),{granted:l,spent:s,held:o}})}settle(e,t,n){return this.locked(e,async r=>{await r(`DELETE FROM conclave_pool_holds WHERE id = $1 AND pool = $2 AND window_start = $3`,[t,e.pool,e.start]),await r(`INSERT INTO conclave_spend VALUES ($1, $2, $3) ON CONFLICT (pool, window_start) DO UPDATE SET spent = conclave_spend.spent + $3`,[e.pool,e.start,n])})}async renew(e,t,n){t.length>0&&await this.pool.query(`UPDATE conclave_pool_holds SET expires_at = ${c} + $1 WHERE pool = $2 AND window_start = $3 AND id = ANY($4)`,[n,e.pool,e.start,t])}locked(e,t){return u(this.pool,`conclave:pool:${e.pool}:${e.start}`,t)}},O=class extends t{};const k=3e3;async function A(t,n=`--coordinate`){let r=a(t),s=(e,i=`does not answer`)=>{let a=e instanceof Error?e.message:String(e);throw new O(`${n} ${r} ${i}: ${o(a,t)}`,{cause:e})};if(/^rediss?:\/\//.test(t)){let{createClient:n}=await import(`./dist-Cn0_KiAw.js`).then(t=>/* @__PURE__ */ e(t.default,1)),a=n({url:t,disableOfflineQueue:!0,socket:{connectTimeout:k,reconnectStrategy:!1}});return a.on(`error`,()=>{}),await M(a.connect().then(()=>a.ping()),`connect`).catch(s),j(s,{shown:r,limiters:new i(new p(a),!0),ledger:new T(a),runs:new g(a),close:async()=>{a.isOpen&&await a.close().catch(()=>{})}})}if(/^postgres(ql)?:\/\//.test(t)){let{default:e}=await import(`./esm-6wO1kMVd.js`),n=new e.Pool({connectionString:t,max:4,connectionTimeoutMillis:k,query_timeout:k,allowExitOnIdle:!0});n.on(`error`,()=>{});let a=new D(n),o=new h(n),c=new _(n);return await M(o.prepare().then(()=>a.prepare()).then(()=>c.prepare()),`connect`).catch(async e=>{await n.end().catch(()=>{}),e.code===`42501`&&s(e,`cannot make its tables (a role that may create tables makes them once; this one then needs only their use)`),s(e)}),j(s,{shown:r,limiters:new i(o,!0),ledger:a,runs:c,close:()=>n.end().catch(()=>{})})}throw new O(`${n} takes a redis://, rediss://, postgres:// or postgresql:// URL; got ${r}`)}async function j(e,t){let n={pool:`conclave-probe`,start:0,keepMs:1},r=`probe:${process.pid}:${Date.now()}`,i=async()=>{await t.limiters.early(`conclave-probe`,0,0),await t.ledger.now(),await t.ledger.reserve(n,r,0,1,1e3),await t.ledger.settle(n,r,0),await t.runs.noted(`conclave-probe`)};try{await M(i(),`a first use`)}catch(n){await t.close(),e(n,`answers but cannot be used`)}return t}function M(e,t){return r(e,k,`no answer to ${t} in ${k/1e3} s`)}export{M as i,k as n,A as r,O as t};