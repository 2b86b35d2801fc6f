// A lead spawning 256 agents in one call, against the fake Messages API answering every call
// after 200 ms: the critical path is 3 calls (the lead's spawn, the 256 agents at once beside the
// lead's reply, the lead's fan-in) plus the CLI's start. Also: how long from the process's start
// to the first model request, and what each spawned agent adds: the same run spawning 1 agent,
// alternated with it, gives the part of the wall time that does not grow with the agents.
import { fileURLToPath } from 'node:url';
import { helpMs, runCliTimed } from './fan-out.js';
import { floorBundle } from './cold-start.js';
import { loadSource } from './load-source.js';

const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const LATENCY = 200;
export const AGENTS = 256;

const workflow = (agents) => `
name: spawn-bench
limits: { concurrency: ${agents + 1}, max_agents: ${agents + 1}, max_turns: ${agents * 2 + 10}, budget_usd: 1000 }
agents:
  lead: { role: manager, spawns: [checker] }
templates:
  checker: { description: checks one module }
kickoff: Check every module.
`;

/**
 * One run of a lead spawning `agents` checkers: its wall time, first request and the spread of
 * the checkers' requests. `program`: another program to run instead of conclave (the floor).
 */
async function spawnRun(agents, node = process.execPath, program = undefined) {
  const tasks = Array.from({ length: agents }, (_, n) => `check module ${n + 1}`);
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
    const { wallMs, startedAt } = await runCliTimed(workflow(agents), server, node, program);
    const asked = server.requests.filter((r) => r.agent.startsWith('checker-')).map((r) => r.receivedAt);
    if (program) return { wallMs, firstRequestMs: server.requests[0].receivedAt - startedAt, asked: asked.length };
    if (asked.length !== agents) throw new Error(`${asked.length} agents asked, not ${agents}`);
    return { wallMs, firstRequestMs: server.requests[0].receivedAt - startedAt, spreadMs: Math.max(...asked) - Math.min(...asked) };
  } finally {
    await server.close();
  }
}

/**
 * The first request of conclave and of its floor (bench/floor-request.js: commander, yaml and the
 * SDK streaming one message, one bundle), alternated, each the median of `rounds` runs.
 */
export async function firstRequestAndFloor(node, rounds = 11) {
  const floor = await floorBundle('floor-request');
  const conclave = [];
  const floored = [];
  for (let i = 0; i < rounds; i++) {
    // Which goes first changes each round: neither always starts while the other's exit is cleaned up.
    const runs = [
      async () => conclave.push((await spawnRun(1, node)).firstRequestMs),
      async () => floored.push((await spawnRun(1, node, floor)).firstRequestMs),
    ];
    for (const run of i % 2 ? runs.reverse() : runs) await run();
  }
  return { conclaveMs: median(conclave), floorMs: median(floored) };
}

/** The bare client's wide spawn (bench/floor-wide.js): the same calls through the same fake, nothing else. */
async function bareRun(floor, node) {
  const bare = await spawnRun(AGENTS, node, floor);
  if (bare.asked !== AGENTS) throw new Error(`the bare client asked ${bare.asked} agents, not ${AGENTS}`);
  return bare.wallMs;
}

export async function spawnFanOut(rounds = 3, node = process.execPath) {
  const floor = await floorBundle('floor-wide');
  const wide = [];
  const single = [];
  const bare = [];
  for (let i = 0; i < rounds; i++) {
    wide.push(await spawnRun(AGENTS, node));
    single.push(await spawnRun(1, node));
    bare.push(await bareRun(floor, node));
  }
  const wallMs = median(wide.map((r) => r.wallMs));
  const bareMs = median(bare);
  const singleMs = median(single.map((r) => r.wallMs));
  const help = helpMs();
  const critical = 3 * LATENCY + help;
  return {
    wallMs,
    helpMs: help,
    ratio: wallMs / critical,
    bareMs,
    bareRatio: wallMs / bareMs,
    firstRequestMs: median(wide.map((r) => r.firstRequestMs)),
    spreadMs: median(wide.map((r) => r.spreadMs)),
    singleMs,
    // What each agent adds: the wide run over the run of one spawned agent, per agent more.
    perAgentMs: Math.max(0, wallMs - singleMs) / (AGENTS - 1),
    // The older, coarser figure: all of the wall time over the critical path, charged to the agents.
    overCriticalPerAgentMs: Math.max(0, wallMs - critical) / AGENTS,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await spawnFanOut());
