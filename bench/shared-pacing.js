// Three conclave runs at once against one rate limit of the fake Messages API (its 429s and
// `anthropic-ratelimit-*` headers as the API sends them, each answer a second after its request,
// as a model's first token comes): each run a lead that spawns 14 reviewers, 45 requests or more
// in all against 10 requests per 5 s. Alone (each run paces by the headers it sees), and with
// --coordinate on Redis and on PostgreSQL. Each against the time the limit allows for the
// requests answered: the bucket's first 10 at once, then one every half second. Issue 56's rows
// (pacingShapes) measure against the time the limit allows the runs' own chain of calls.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const bin = join(root, 'bin/conclave.js');
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { FAN_OUT, fanOutScript } = await loadSource('test/fixtures/fan-out.ts');
const { startRedis, startPostgres, missingStores } = await loadSource('test/helpers/stores.ts');

export const RUNS = 3;
export const REVIEWERS = 14;
export const LIMIT = { limit: 10, windowMs: 5_000 };
export const LATENCY_MS = Number(process.env.LAT ?? 1_000);

function runOnce(server, args, reviewers, limits = '') {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), FAN_OUT(reviewers, limits));
  const child = spawn(process.execPath, [bin, 'run', 'workflow.yml', '--json', ...args], {
    cwd: dir,
    env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench' },
    stdio: ['ignore', 'pipe', process.env.DBG_RATE ? 'inherit' : 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (c) => (err += c));
  child.stdout.on('data', (c) => (err += c));
  return new Promise((resolve) => child.on('close', (code) => resolve(code === 0 ? undefined : `exit ${code}: ${/"reason": "([^"]*)"/.exec(err)?.[1]}`)));
}

/** RUNS runs at once (or `runs`) with `args`: wall time, requests, refusals, and the time the limit allows for the requests made. */
export async function threeRuns(args, reviewers = REVIEWERS, limits = { requests: LIMIT }, runs = RUNS, shape) {
  const server = await startFakeAnthropic(fanOutScript(reviewers), { rateLimits: limits, latencyMs: LATENCY_MS, ...(shape ? { rateLimiter: shape } : {}) });
  try {
    const started = Date.now();
    // Issue 56's rows are paced by the limit alone: a run's own concurrency (4 turns by default) would hold it below the
    // limit's rate, and the time the limit allows is measured as if every request were ready.
    const own = shape ? 'limits: { concurrency: 32 }' : '';
    const failures = (await Promise.all(Array.from({ length: runs }, () => runOnce(server, args, reviewers, own)))).filter(Boolean);
    const wallMs = Date.now() - started;
    const answered = server.requests.length;
    const { limit, windowMs } = limits.requests;
    if (!shape) {
      // The older rows: the bucket's pace alone.
      const allowedMs = (Math.max(0, answered - limit) * windowMs) / limit;
      return { wallMs, answered, refusals: server.refusals, allowedMs, ratio: wallMs / allowedMs, failures };
    }
    // Issue 56's rows: as if every request were ready at once (a bound no run reaches: the lead's last call waits for the
    // answers before it), and the run's own chain of calls sent each as early as the limiter lets it go.
    const allReadyMs =
      shape === 'sliding' ? Math.floor((answered - 1) / limit) * windowMs + LATENCY_MS : (Math.max(0, answered - limit) * windowMs) / limit + LATENCY_MS;
    const expected = runs * (reviewers + 3);
    if (answered !== expected) failures.push(`${answered} answers, the fan-out makes ${expected}`);
    const allowedMs = chainAllowedMs(shape, limits.requests, runs, reviewers);
    return { wallMs, answered, refusals: server.refusals, allowedMs, ratio: wallMs / allowedMs, allReadyMs, allReadyRatio: wallMs / allReadyMs, failures };
  } finally {
    await server.close();
  }
}

/**
 * The time a limit allows for `runs` fan-outs of `reviewers` (test/fixtures/fan-out.ts), each answer LATENCY_MS after
 * its request: a run's lead spawns (1 call); its reviewers and the lead's answer to the spawn's result are then ready at
 * once (reviewers + 1); its last call is ready when all of those have answered (1). Every request goes the moment it
 * is ready and the limiter (the fake API's, `bucket` or `sliding`) lets it, earliest ready first. For one run that
 * is the soonest any pacer can finish; for several it is the soonest for that order.
 */
export function chainAllowedMs(shape, { limit, windowMs }, runs, reviewers) {
  const sent = [];
  let tokens = limit;
  let refilledAt = 0;
  /** The soonest at or after `ready`, and not before the request sent last, that the limiter takes one more. */
  const soonest = (after) => {
    const ready = Math.max(after, sent.at(-1) ?? 0);
    if (shape === 'sliding') {
      const inWindow = sent.filter((at) => at > ready - windowMs);
      return inWindow.length < limit ? ready : inWindow[inWindow.length - limit] + windowMs;
    }
    const level = Math.min(limit, tokens + ((ready - refilledAt) * limit) / windowMs);
    return level >= 1 ? ready : ready + ((1 - level) * windowMs) / limit;
  };
  const take = (at) => {
    if (shape !== 'sliding') {
      tokens = Math.min(limit, tokens + ((at - refilledAt) * limit) / windowMs) - 1;
      refilledAt = at;
    }
    sent.push(at);
    return at + LATENCY_MS;
  };
  const phases = [1, reviewers + 1, 1];
  let ready = Array.from({ length: runs }, (_, run) => ({ run, phase: 0, at: 0 }));
  const answeredAt = Array.from({ length: runs }, () => 0);
  let end = 0;
  while (ready.length > 0) {
    ready.sort((a, b) => a.at - b.at);
    const { run, phase, at } = ready[0];
    ready = ready.slice(1);
    const answer = take(soonest(at));
    answeredAt[run] = Math.max(answeredAt[run], answer);
    end = Math.max(end, answer);
    const phaseDone = !ready.some((r) => r.run === run && r.phase === phase);
    if (phaseDone && phase + 1 < phases.length) for (let i = 0; i < phases[phase + 1]; i++) ready.push({ run, phase: phase + 1, at: answeredAt[run] });
  }
  return end;
}

/** Reviewers of the one run that paces itself by the API's headers alone: 26 answers. */
export const ONE_RUN_REVIEWERS = 23;

export async function sharedPacing() {
  const results = { one: await threeRuns([], ONE_RUN_REVIEWERS, { requests: LIMIT }, 1), alone: await threeRuns([]) };
  const missing = missingStores();
  if (missing) return { ...results, skipped: missing };
  for (const [kind, start] of [
    ['redis', startRedis],
    ['postgres', startPostgres],
  ]) {
    const store = await start();
    try {
      results[kind] = await threeRuns(['--coordinate', store.url]);
    } finally {
      await store.kill();
    }
  }
  return results;
}

/** Issue 56's limit: 12 requests in 5 s, as a token bucket and as a sliding window; three runs of lead + 8 sharing it, and one run of lead + 24 alone. */
export const SHAPE_LIMIT = { limit: 12, windowMs: 5_000 };
export const SHAPE_REVIEWERS = 8;
export const SHAPE_ONE_REVIEWERS = 24;

export async function pacingShapes() {
  const limits = { requests: SHAPE_LIMIT };
  const results = [];
  const missing = missingStores();
  for (const shape of ['bucket', 'sliding']) {
    results.push({ shape, how: 'one run alone', ...(await threeRuns([], SHAPE_ONE_REVIEWERS, limits, 1, shape)) });
    if (missing) continue;
    for (const [kind, start] of [
      ['redis', startRedis],
      ['postgres', startPostgres],
    ]) {
      const store = await start();
      try {
        results.push({
          shape,
          how: `${RUNS} runs, --coordinate on ${kind}`,
          ...(await threeRuns(['--coordinate', store.url], SHAPE_REVIEWERS, limits, RUNS, shape)),
        });
      } finally {
        await store.kill();
      }
    }
  }
  return results;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const results = await sharedPacing();
  for (const [name, r] of Object.entries(results)) {
    if (typeof r === 'string') console.log(`${name}: ${r}`);
    else
      console.log(
        `${name}: ${(r.wallMs / 1000).toFixed(1)} s for ${r.answered} answers (${r.refusals} refusals); the limit allows ${(r.allowedMs / 1000).toFixed(1)} s: ${r.ratio.toFixed(2)}×${r.failures.length ? `; failed: ${r.failures.join('; ')}` : ''}`,
      );
  }
}
