// conclave run --workers end to end, with a real Redis and real `conclave worker` processes: a lead
// and 24 for_each workers, each of whose turns runs a 2 s command on a worker. The same run on 1
// worker taking 4 turns at once, and on 3 such workers: each against its ideal, the number of
// rounds of 4 (or 12) commands times 2 s.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const bin = join(root, 'bin/conclave.js');
const { startFakeAnthropic, lastToolResult } = await loadSource('test/fake-anthropic/server.ts');
const { startRedis, missingStores } = await loadSource('test/helpers/stores.ts');

export const TEAM = 24;
export const COMMAND_MS = 2000;
const PER_WORKER = 4;

const WORKFLOW = `
name: workers-bench
limits: { concurrency: ${TEAM}, max_agents: ${TEAM + 1} }
sandbox: off
agents:
  lead: { role: manager }
  checker:
    role: worker
    for_each: [${Array.from({ length: TEAM }, (_, i) => `m${i + 1}`).join(', ')}]
    tools: [run_command]
kickoff: Check every module.
`;

function checkout() {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), WORKFLOW);
  return dir;
}

function start(args, cwd, env) {
  const child = spawn(process.execPath, [bin, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, err: () => err };
}

/** One run on `workers` workers of PER_WORKER turns each: its wall time, from the coordinator's start to its exit. */
async function runOn(redis, server, workers, queue) {
  // The coordinator and its workers share a secret: every job and message on the Redis is signed with it.
  const secret = { CONCLAVE_WORKERS_SECRET: 'a-bench-secret-shared-by-coordinator-and-workers' };
  const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench', ...secret };
  const pool = Array.from({ length: workers }, () => start(['worker', redis.url, '--queue', queue, '--concurrency', String(PER_WORKER)], checkout(), env));
  // Workers are up (their first line printed) before the run starts, as in a matrix that started first.
  while (!pool.every((w) => w.err().includes('taking turns'))) {
    const gone = pool.find((w) => w.child.exitCode !== null);
    if (gone) throw new Error(`a worker exited before taking turns: ${gone.err()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const started = process.hrtime.bigint();
  const run = start(['run', 'workflow.yml', '--quiet', '--workers', redis.url, '--queue', queue], checkout(), { ANTHROPIC_API_KEY: '', ...secret });
  const code = await run.exited;
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (code !== 0) throw new Error(`conclave run --workers exited ${code}: ${run.err()}`);
  await Promise.all(pool.map((w) => w.exited));
  return wallMs;
}

export async function workersSpread(rounds = 2) {
  const missing = missingStores();
  if (missing) throw new Error(`the workers benchmark needs redis-server: ${missing}`);
  const redis = await startRedis();
  const checker = (r) => (lastToolResult(r) ? { text: 'checked' } : { tools: [{ name: 'run_command', input: { command: `sleep ${COMMAND_MS / 1000}` } }] });
  const server = await startFakeAnthropic({
    lead: (r) => ({ text: JSON.stringify(r.body.messages).includes('checked') ? 'All checked.' : '@checker check your module.' }),
    ...Object.fromEntries(Array.from({ length: TEAM }, (_, i) => [`checker-${i + 1}`, checker])),
  });
  const out = {};
  try {
    for (const workers of [1, 3]) {
      const walls = [];
      for (let i = 0; i < rounds; i++) walls.push(await runOn(redis, server, workers, `bench-${workers}-${i}-${process.pid}`));
      const idealMs = Math.ceil(TEAM / (workers * PER_WORKER)) * COMMAND_MS;
      const wallMs = Math.max(...walls);
      out[workers] = { wallMs, idealMs, ratio: wallMs / idealMs };
    }
  } finally {
    await server.close();
    await redis.kill();
  }
  return out;
}
