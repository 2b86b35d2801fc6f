// Context (DESIGN §11), conclave run end to end against the fake Messages API:
// - a 2,000-team-turn ping-pong of 2,000-character replies: bytes sent per request stay bounded
//   (flat after the first compaction), so total bytes grow linearly with the run's length;
// - a fan-out of 1 + 1,024 workers: a worker's request is about as large as in a 1 + 8 fan-out,
//   as its preamble lists its neighbourhood, not the team.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const bin = join(root, 'bin/conclave.js');
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { pingPongScript, pingPongWorkflow } = await loadSource('test/fixtures/ping-pong.ts');

function runCli(workflow, server) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  const child = spawn(process.execPath, [bin, 'run', 'workflow.yml', '--quiet'], {
    cwd: dir,
    env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench' },
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.on('close', resolve));
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

/** Bytes per request over a long ping-pong, in the order sent. */
export async function longRun(turns = 2000) {
  const server = await startFakeAnthropic(pingPongScript(2000));
  const code = await runCli(pingPongWorkflow({ maxTurns: turns }), server);
  await server.close();
  const bytes = server.requests.map((r) => r.bytes);
  const total = (n) => bytes.slice(0, n).reduce((a, b) => a + b, 0);
  // A compaction is the API's compaction request on Anthropic's API, or conclave's own summary call elsewhere.
  const firstCompaction = server.requests.findIndex(
    (r) => r.body.compaction !== undefined || /Write a summary of your work so far/.test(JSON.stringify(r.body.messages.at(-1))),
  );
  const after = bytes.slice(firstCompaction);
  const half = Math.floor(after.length / 2);
  return {
    code,
    requests: bytes.length,
    firstCompaction,
    maxBytes: Math.max(...bytes),
    // Flat: the later half after the first compaction sends no more per request than the earlier half.
    flatRatio: mean(after.slice(half)) / mean(after.slice(0, half)),
    // Linear: the whole run sends twice what its first half sent, give or take.
    growthRatio: total(bytes.length) / total(Math.floor(bytes.length / 2)),
  };
}

/** Mean bytes of a worker's request in a fan-out of `workers`. */
async function workerBytes(workers) {
  const names = Array.from({ length: workers }, (_, i) => `w${i + 1}`);
  const workflow = `
name: wide
limits: { concurrency: 32, max_turns: ${workers * 2 + 10}, budget_usd: 1000 }
agents:
  lead: { role: manager }
${names.map((w) => `  ${w}: { role: worker, description: checks module ${w} }`).join('\n')}
kickoff: Check every module.
`;
  const server = await startFakeAnthropic({
    lead: [{ text: '@all check your module and report.' }, { text: 'Done.' }],
    ...Object.fromEntries(names.map((w) => [w, [{ text: `module of ${w} is fine` }]])),
  });
  await runCli(workflow, server);
  await server.close();
  const requests = server.requests.filter((r) => r.agent !== 'lead');
  if (requests.length !== workers) throw new Error(`expected ${workers} worker requests, got ${requests.length}`);
  return mean(requests.map((r) => r.bytes));
}

export async function wideTeam() {
  const small = await workerBytes(8);
  const large = await workerBytes(1024);
  return { small, large, ratio: large / small };
}
