import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lastToolResult, startFakeAnthropic, type FakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { missingStores, startRedis, type StoreServer } from '../helpers/stores.js';
import { checkout, filesOf, otherVersionBuild, startConclave, startWorker, until, type Background } from '../helpers/workers.js';

const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the workers tests must run here, but ${missing}`);
if (missing) process.stderr.write(`\n*** SKIPPING the workers tests: ${missing} (apt-get install -y redis-server) ***\n\n`);

/** A lead and four reviewers (for_each), each of which runs a command and writes a file where it runs. */
const SPREAD = `
name: spread
limits: { concurrency: 8 }
defaults: { max_tokens: 1024 }
agents:
  lead: { role: manager }
  reviewer:
    role: worker
    for_each: [a, b, c, d]
    tools: [run_command, write_file]
kickoff: Review.
`;

/** A lead and one helper, whose turn runs a command and then answers. */
const ONE = (command: string) => `
name: one
defaults: { max_tokens: 1024 }
agents:
  lead: { role: manager }
  helper: { role: worker, tools: [run_command] }
kickoff: Start.
# ${command}
`;

let redis: StoreServer;
let server: FakeAnthropic | undefined;
const started: Background[] = [];
let queues = 0;

beforeAll(async () => {
  if (!missing) redis = await startRedis();
});
afterAll(async () => redis?.kill());
afterEach(async () => {
  for (const p of started.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await server?.close();
  server = undefined;
});

/** A queue of its own for each run: workers of one test never see another's turns. */
const newQueue = () => `test-${process.pid}-${++queues}`;

/** Where the workers call the model: each with its own key; the coordinator has none. */
const modelEnv = () => ({ ANTHROPIC_BASE_URL: server!.url, ANTHROPIC_API_KEY: TEST_API_KEY });
const noKey = { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' };

function worker(queue: string, dir: string, options: { concurrency?: number; bin?: string } = {}): Background {
  const w = startWorker(redis.url, queue, dir, modelEnv(), options);
  started.push(w);
  return w;
}

function coordinator(args: string[], dir: string): Background {
  const c = startConclave(args, dir, noKey);
  started.push(c);
  return c;
}

function resultOf(run: Background): { status: string; reason: string; session: string; exit_code: number } {
  try {
    return JSON.parse(run.stdout());
  } catch {
    throw new Error(`no result in:\n${run.output()}`);
  }
}

function events(dir: string, session: string): { type: string; [k: string]: unknown }[] {
  return readFileSync(join(dir, session), 'utf8').trim().split('\n').slice(1).map((l) => JSON.parse(l));
}

const reviewerReplies = (request: RecordedRequest) => {
  if (lastToolResult(request) === 'write_file') return { text: `${request.agent} reviewed` };
  if (lastToolResult(request) === 'run_command') return { tools: [{ name: 'write_file', input: { path: `done-${request.agent}.txt`, content: 'x' } }] };
  return { tools: [{ name: 'run_command', input: { command: 'sleep 1' } }] };
};

describe.skipIf(missing !== undefined)('--workers: turns on worker processes through BullMQ', () => {
  it("spreads a team's turns over two workers: every tool runs in a worker's checkout, none in the coordinator's, and the coordinator needs no API key", async () => {
    server = await startFakeAnthropic({
      lead: (r) => ({ text: r.call === 1 ? '@reviewer go' : 'All reviewed.' }),
      'reviewer-1': reviewerReplies,
      'reviewer-2': reviewerReplies,
      'reviewer-3': reviewerReplies,
      'reviewer-4': reviewerReplies,
    });
    const queue = newQueue();
    const home = checkout(SPREAD);
    const [one, two] = [checkout(SPREAD), checkout(SPREAD)];
    const workers = [worker(queue, one), worker(queue, two)];
    const run = coordinator(['run', 'workflow.yml', '--json', '--workers', redis.url, '--queue', queue], home);
    expect(await run.exited, run.output()).toBe(0);
    const result = resultOf(run);
    expect(result.status).toBe('idle');
    const inOne = filesOf(one, 'done-');
    const inTwo = filesOf(two, 'done-');
    expect([...inOne, ...inTwo].sort()).toEqual(['done-reviewer-1.txt', 'done-reviewer-2.txt', 'done-reviewer-3.txt', 'done-reviewer-4.txt']);
    expect(inOne.length, 'the first worker ran some of the tools').toBeGreaterThan(0);
    expect(inTwo.length, 'the second worker ran some of the tools').toBeGreaterThan(0);
    expect(filesOf(home, 'done-'), 'no tool ran in the coordinator').toEqual([]);
    // The session is as if the turns had run here: every call and tool result recorded once.
    const recorded = events(home, result.session);
    expect(recorded.filter((e) => e.type === 'model_call')).toHaveLength(2 + 4 * 3);
    expect(recorded.filter((e) => e.type === 'tool_result').map((e) => e.is_error)).toEqual(Array(8).fill(false));
    expect(server.requests).toHaveLength(2 + 4 * 3);
    // The run over, the workers see it and exit.
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
    expect(workers[0]!.output()).toContain('the run has ended');

    // The distributed session replays offline, with no worker and no model.
    await server.close();
    server = undefined;
    const replay = await conclave(['run', 'workflow.yml', '--json', '--replay', result.session], { cwd: home, env: noKey });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout).status).toBe('idle');
    expect(filesOf(home, 'done-'), 'the replay ran no tool either').toEqual([]);
    const shown = await conclave(['show', result.session], { cwd: home });
    expect(shown.stdout).toContain('reviewer-4 reviewed');
  }, 90_000);
});
