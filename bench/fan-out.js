// conclave run end to end against the fake Messages API answering every call after 1,000 ms:
// a lead and 8 workers in the fan-out pattern, where fan-in leaves 3 sequential model calls
// on the critical path (lead, the 8 workers at once, lead). Also: an agent's 5th request is
// as large whether or not the channel holds 20 messages it never received.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from './load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const bin = join(root, 'bin/conclave.js');
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const LATENCY = 1000;
const WORKERS = Array.from({ length: 8 }, (_, i) => `w${i + 1}`);

const FAN_OUT = `
name: fan-out-bench
limits: { concurrency: 8 }
agents:
  lead: { role: manager }
${WORKERS.map((w) => `  ${w}: { role: worker }`).join('\n')}
kickoff: Check the eight modules.
`;

/** Runs `workflow` with the built CLI against `server`: its wall time in ms, and when it started (Date.now()). */
export function runCliTimed(workflow, server, node = process.execPath, program = bin) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  writeFileSync(join(dir, 'workflow.yml'), workflow);
  const startedAt = Date.now();
  const started = process.hrtime.bigint();
  const child = spawn(node, [program, 'run', 'workflow.yml', '--quiet'], {
    cwd: dir,
    env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-bench' },
    stdio: 'ignore',
  });
  return new Promise((resolve, reject) =>
    child.on('close', (code) =>
      code === 0 ? resolve({ wallMs: Number(process.hrtime.bigint() - started) / 1e6, startedAt }) : reject(new Error(`conclave exited ${code}`)),
    ),
  );
}

const runCli = async (workflow, server) => (await runCliTimed(workflow, server)).wallMs;

/** The median time of `conclave --help`: the CLI's start, the part of every run's wall time that is not its calls. */
export function helpMs() {
  const times = [];
  for (let i = 0; i < 7; i++) {
    const start = process.hrtime.bigint();
    spawnSync(process.execPath, [bin, '--help'], { stdio: 'ignore' });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

export async function fanOut(rounds = 3) {
  const walls = [];
  let leadCalls;
  for (let i = 0; i < rounds; i++) {
    const server = await startFakeAnthropic(
      {
        lead: [
          { text: `${WORKERS.map((w) => `@${w}`).join(' ')} please check your module.` },
          { tools: [{ name: 'complete', input: { status: 'success', summary: 'all checked' } }] },
        ],
        ...Object.fromEntries(WORKERS.map((w) => [w, [{ text: `${w}: no findings` }]])),
      },
      { latencyMs: LATENCY },
    );
    try {
      walls.push(await runCli(FAN_OUT, server));
      leadCalls = server.of('lead').length;
    } finally {
      await server.close();
    }
  }
  const wallMs = median(walls);
  const help = helpMs();
  return { wallMs, helpMs: help, ratio: wallMs / (3 * LATENCY + help), leadCalls };
}

const PAIR = `
name: history-bench
agents:
  lead: { role: manager, wake: each }
  w: { role: worker }
  x: { role: worker }
limits: { max_turns: 200, max_turns_per_agent: 100 }
kickoff: "@lead begin"
`;

/** The size of @w's 5th request, after `noise` messages between @lead and @x that @w never received. */
async function fifthRequestBytes(noise) {
  let chats = 0;
  let steps = 0;
  const toW = () => (steps < 5 ? { text: `@w do step ${++steps}` } : { text: '' });
  const server = await startFakeAnthropic({
    lead: (request) => {
      const told = JSON.stringify(request.body.messages.at(-1));
      if (told.includes('from @w')) return toW();
      return chats < noise ? { text: `@x chat ${++chats}` } : toW();
    },
    x: () => ({ text: 'chatter' }),
    w: () => ({ text: 'step done' }),
  });
  try {
    await runCli(PAIR, server);
    return server.of('w')[4].bytes;
  } finally {
    await server.close();
  }
}

export async function historyGrowth() {
  const quiet = await fifthRequestBytes(0);
  const noisy = await fifthRequestBytes(20);
  return { quietBytes: quiet, noisyBytes: noisy, difference: noisy - quiet };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await fanOut());
  console.log(await historyGrowth());
}
