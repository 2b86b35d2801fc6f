// A lead and 8 reviewers whose calls go through the Message Batches API (`batch: true`), against
// the same run with ordinary calls, both against the fake Messages API (its batches end 200 ms
// after they are submitted): what the batch price saves, measured in one run.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { REVIEW, reviewScript } = await loadSource('test/fixtures/review-team.ts');
const bin = fileURLToPath(new URL('../bin/conclave.js', import.meta.url));

async function review(batch) {
  const server = await startFakeAnthropic(reviewScript(8), { batches: { endsAfterMs: 200 } });
  try {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
    writeFileSync(join(dir, 'workflow.yml'), REVIEW(batch));
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, 'run', 'workflow.yml', '--json'], {
      cwd: dir,
      env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`conclave exited ${code}`);
    return {
      costUsd: JSON.parse(out).usage.cost_usd,
      wallMs: Number(process.hrtime.bigint() - started) / 1e6,
      batches: server.batches.map((b) => b.requests.length),
      ordinary: server.requests.filter((r) => r.batch === undefined).length,
    };
  } finally {
    await server.close();
  }
}

export async function batchedReview() {
  const plain = await review(false);
  const batched = await review(true);
  return { plain, batched, ratio: batched.costUsd / plain.costUsd };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await batchedReview());
