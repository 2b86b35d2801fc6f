// Peak memory of conclave while a tool streams 1 GB of output through run_command's 64 KiB cap,
// against a run whose tool prints nothing for as long (DESIGN §8: memory follows the cap, not the
// output). Peak = VmHWM of the conclave process, read from /proc while it runs.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const bin = join(root, 'bin/conclave.js');
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');

async function peakOf(command) {
  const server = await startFakeAnthropic({ lead: [{ tools: [{ name: 'run_command', input: { command, timeout_seconds: 120 } }] }, { text: 'done' }] });
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), 'name: mem\nsandbox: off\nagents:\n  lead: { role: manager, tools: [run_command] }\nkickoff: Go.\n');
  const started = Date.now();
  const child = spawn(process.execPath, [bin, 'run', 'workflow.yml', '--quiet'], {
    cwd: dir,
    env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench' },
    stdio: 'ignore',
  });
  let peakKb = 0;
  const poll = setInterval(() => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]));
    } catch {
      // ended
    }
  }, 10);
  const code = await new Promise((resolve) => child.on('close', resolve));
  clearInterval(poll);
  await server.close();
  if (code !== 0) throw new Error(`conclave exited ${code} running ${command}`);
  return { peakKb, ms: Date.now() - started };
}

export async function toolMemory() {
  const idle = await peakOf('sleep 3');
  const stream = await peakOf('head -c 1000000000 /dev/zero');
  return { idleKb: idle.peakKb, streamKb: stream.peakKb, streamMs: stream.ms, ratio: stream.peakKb / idle.peakKb };
}
