// One `conclave run --json` of a workflow against a fake API: its wall time and its result.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/conclave.js', import.meta.url));

/** Runs `workflow` (with `files` beside it) in a fresh directory; rejects unless it exits 0. */
export async function runCliJson(workflow, server, files = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
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
  return { wallMs: Number(process.hrtime.bigint() - started) / 1e6, result: JSON.parse(out) };
}
