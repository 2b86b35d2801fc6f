// A lead spawning 256 agents in one call, against the fake Messages API answering every call
// after 200 ms: the critical path is 3 calls (the lead's spawn, the 256 agents at once beside the
// lead's reply, the lead's fan-in) plus the CLI's start. Also: how long from the process's start
// to the first model request.
import { fileURLToPath } from 'node:url';
import { helpMs, runCliTimed } from './fan-out.js';
import { loadSource } from './load-source.js';

const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const LATENCY = 200;
export const AGENTS = 256;

const WORKFLOW = `
name: spawn-bench
limits: { concurrency: ${AGENTS + 1}, max_agents: ${AGENTS + 1}, max_turns: ${AGENTS * 2 + 10}, budget_usd: 1000 }
agents:
  lead: { role: manager, spawns: [checker] }
templates:
  checker: { description: checks one module }
kickoff: Check every module.
`;

export async function spawnFanOut(rounds = 3) {
  const walls = [];
  const firsts = [];
  const spreads = [];
  for (let i = 0; i < rounds; i++) {
    const tasks = Array.from({ length: AGENTS }, (_, n) => `check module ${n + 1}`);
    const server = await startFakeAnthropic(
      {
        lead: (r) => {
          const sent = JSON.stringify(r.body.messages);
          if (sent.includes('no findings')) return { tools: [{ name: 'complete', input: { status: 'success', summary: 'all checked' } }] };
          if (sent.includes('Started @')) return { text: 'Spawned.' };
          return { tools: [{ name: 'spawn', input: { template: 'checker', tasks } }] };
        },
        ...Object.fromEntries(tasks.map((_, n) => [`checker-${n + 1}`, [{ text: 'no findings' }]])),
      },
      { latencyMs: LATENCY },
    );
    try {
      const { wallMs, startedAt: started } = await runCliTimed(WORKFLOW, server);
      walls.push(wallMs);
      firsts.push(server.requests[0].receivedAt - started);
      const asked = server.requests.filter((r) => r.agent.startsWith('checker-')).map((r) => r.receivedAt);
      spreads.push(Math.max(...asked) - Math.min(...asked));
      if (asked.length !== AGENTS) throw new Error(`${asked.length} agents asked, not ${AGENTS}`);
    } finally {
      await server.close();
    }
  }
  const wallMs = median(walls);
  const help = helpMs();
  const critical = 3 * LATENCY + help;
  return { wallMs, helpMs: help, ratio: wallMs / critical, firstRequestMs: median(firsts), spreadMs: median(spreads), perAgentMs: Math.max(0, wallMs - critical) / AGENTS };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await spawnFanOut());
