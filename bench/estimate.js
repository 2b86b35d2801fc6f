// `conclave estimate` of a lead and a for_each of 256 reviewers (issue 55: under 2 s), against the
// fake Messages API answering each token count after 200 ms: the whole command, the process's
// start included, median of 5.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const bin = fileURLToPath(new URL('../bin/conclave.js', import.meta.url));
export const ITEMS = 256;
export const COUNT_LATENCY_MS = 200;

const workflow = `
name: estimate-bench
limits: { max_agents: ${ITEMS + 1} }
agents:
  lead: { role: manager }
  reviewer:
    role: worker
    for_each: [${Array.from({ length: ITEMS }, (_, i) => `src/file${i + 1}.js`).join(', ')}]
    system: Review $<< item >> only.
kickoff: Review every file.
`;

export async function estimateFanOut(rounds = 5) {
  const server = await startFakeAnthropic({}, { latencyMs: COUNT_LATENCY_MS });
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  const times = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const started = process.hrtime.bigint();
      const code = await new Promise((resolve) =>
        spawn(process.execPath, [bin, 'estimate', 'workflow.yml', '--json'], {
          cwd: dir,
          env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench' },
          stdio: 'ignore',
        }).on('close', resolve),
      );
      if (code !== 0) throw new Error(`conclave estimate exited ${code}`);
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return { medianMs: [...times].sort((a, b) => a - b)[Math.floor(rounds / 2)], counts: server.counts.length / rounds, messages: server.requests.length };
  } finally {
    await server.close();
  }
}
