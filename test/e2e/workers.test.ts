import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { createHash, createHmac } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lastToolResult, startFakeAnthropic, type FakeAnthropic, type RecordedRequest } from '../fake-anthropic/server.js';
import { conclave, ROOT } from '../helpers/cli.js';
import { FAN_OUT, fanOutScript } from '../fixtures/fan-out.js';
import { RELAY, relayScript } from '../fixtures/relay.js';
import { pingPongScript, pingPongWorkflow } from '../fixtures/ping-pong.js';
import { CANCEL_TEAM, cancellingLead, SPAWNING_MANAGER } from '../fixtures/cancel-team.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { ALICE_PLAN, PLAN_TEAM, threeEdits, withLine } from '../fixtures/plan-team.js';
import { missingStores, startRedis, type StoreServer } from '../helpers/stores.js';
import { checkout, filesOf, otherVersionBuild, startConclave, startWorker, until, type Background } from '../helpers/workers.js';

const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the workers tests must run here, but ${missing}`);
if (missing) process.stderr.write(`\n*** SKIPPING the workers tests: ${missing} (apt-get install -y redis-server) ***\n\n`);

/** A lead and four reviewers (for_each), each of which runs a command and writes a file where it runs. */
const SPREAD = `
name: spread
env: { MARK: from-the-run }
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

/** The secret the coordinator and its workers share: what they say to each other through the Redis is signed with it. */
const SECRET = 'a-test-secret-shared-by-coordinator-and-workers';
/** Where the workers call the model: each with its own key; the coordinator has none. */
const modelEnv = () => ({ ANTHROPIC_BASE_URL: server?.url ?? 'http://127.0.0.1:9', ANTHROPIC_API_KEY: TEST_API_KEY, CONCLAVE_WORKERS_SECRET: SECRET });
const noKey = { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', CONCLAVE_WORKERS_SECRET: SECRET };
/** What a coordinator or worker with the secret would push: a message sealed for the list it goes on (src/workers/signing.ts). */
const sealed = (place: string, message: unknown) => {
  const body = JSON.stringify(message);
  return { body, mac: createHmac('sha256', SECRET).update(place).update('\n').update(body).digest('hex') };
};

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

/** A fresh queue, the coordinator's checkout, and `n` workers' checkouts with their workers started. */
function setUp(workflow: string, n: number, concurrency = 1) {
  const queue = newQueue();
  const dirs = Array.from({ length: n }, () => checkout(workflow));
  return { queue, home: checkout(workflow), dirs, workers: dirs.map((d) => worker(queue, d, { concurrency })) };
}

/** `conclave run --json` of the checkout's workflow, its turns on `queue`. */
function runOn(queue: string, home: string, ...more: string[]): Background {
  return coordinator(['run', 'workflow.yml', '--json', '--workers', redis.url, '--queue', queue, ...more], home);
}

/** The lead sends @helper, whose turn runs `command` and then answers (its first call answered after `firstDelayMs`). */
const helperRuns = (command: string, firstDelayMs = 0) => ({
  lead: (r: RecordedRequest) => ({ text: r.call === 1 ? '@helper go' : 'Done.' }),
  helper: (r: RecordedRequest) =>
    lastToolResult(r) ? { text: 'helper finished' } : { tools: [{ name: 'run_command', input: { command } }], delayMs: r.call === 1 ? firstDelayMs : 0 },
});

function resultOf(run: Background): { status: string; reason: string; session: string; exit_code: number } {
  try {
    return JSON.parse(run.stdout());
  } catch {
    throw new Error(`no result in:\n${run.output()}`);
  }
}

function events(dir: string, session: string): { type: string; [k: string]: unknown }[] {
  return readFileSync(join(dir, session), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => JSON.parse(l));
}

const reviewerReplies = (request: RecordedRequest) => {
  if (lastToolResult(request) === 'write_file') return { text: `${request.agent} reviewed` };
  if (lastToolResult(request) === 'run_command') return { tools: [{ name: 'write_file', input: { path: `done-${request.agent}.txt`, content: 'x' } }] };
  return { tools: [{ name: 'run_command', input: { command: 'sleep 1; echo "mark: $MARK"' } }] };
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
    const {
      queue,
      home,
      dirs: [one, two],
      workers,
    } = setUp(SPREAD, 2);
    const run = runOn(queue, home);
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
    // The workflow's env: reaches the commands on the workers.
    expect(recorded.filter((e) => e.type === 'tool_result' && e.tool === 'run_command').map((e) => String(e.content).includes('mark: from-the-run'))).toEqual(
      Array(4).fill(true),
    );
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

  it("documents with remote turns: edits and reviews act on the coordinator's channel, and write_to writes in the coordinator's checkout", async () => {
    server = await startFakeAnthropic(threeEdits());
    const {
      queue,
      home,
      dirs: [one],
    } = setUp(PLAN_TEAM(), 1);
    const run = runOn(queue, home);
    expect(await run.exited, run.output()).toBe(0);
    const result = resultOf(run) as ReturnType<typeof resultOf> & { outputs: Record<string, string> };
    const both = withLine(ALICE_PLAN, 4, '4. Drop the old table after a week');
    expect(result.outputs).toEqual({ plan: both, findings: 'bob: step 4 cannot be undone\ncarol: nothing says how long step 2 takes\n' });
    expect(readFileSync(join(home, 'out', 'PLAN.md'), 'utf8')).toBe(both);
    expect(existsSync(join(one!, 'out')), 'the worker wrote no document').toBe(false);
    expect(
      events(home, result.session)
        .filter((e) => e.type === 'edit_closed')
        .map((e) => e.status),
    ).toEqual(['accepted', 'accepted', 'rejected']);
  }, 90_000);

  /** Kills -9 the worker that took the helper's turn, once `moment` holds; returns the other one. */
  async function killHolder(workers: Background[], moment: () => boolean): Promise<Background> {
    await until(() => workers.some((w) => w.output().includes('took turn 1 of @helper')) && moment(), "the helper's turn under way");
    const holder = workers.find((w) => w.output().includes('took turn 1 of @helper'))!;
    holder.child.kill('SIGKILL');
    await holder.exited;
    return workers.find((w) => w !== holder)!;
  }

  it('a worker killed -9 while a command runs: another takes the turn over in seconds, no model call is made twice, and the command that may have acted is "outcome unknown"', async () => {
    server = await startFakeAnthropic(helperRuns('sleep 3'));
    const { queue, home, workers } = setUp(ONE('sleep'), 2);
    const startedAt = Date.now();
    const run = runOn(queue, home);
    const helperCalled = () => server!.of('helper').length === 1 && Date.now() - server!.of('helper')[0]!.receivedAt > 300;
    const other = await killHolder(workers, helperCalled);
    expect(await run.exited, run.output()).toBe(0);
    expect(Date.now() - startedAt, "taken over in seconds, not BullMQ's default 30 s").toBeLessThan(20_000);
    expect(other.output()).toContain('took turn 1 of @helper');
    expect(server.of('helper'), 'no model call paid twice').toHaveLength(2);
    const recorded = events(home, resultOf(run).session);
    const result = recorded.find((e) => e.type === 'tool_result' && e.tool === 'run_command');
    expect(result?.content).toMatch(/^The outcome of this run_command call is unknown: the worker running it \(\S+\) stopped, and it was not run again/);
    expect(result?.is_error).toBe(true);
    expect(recorded.filter((e) => e.type === 'model_call' && e.agent === 'helper')).toHaveLength(2);
  }, 60_000);

  it('a worker that loses its lock on a turn stops it at once (its command killed), and another worker takes the turn over', async () => {
    const marker = `sleep 30.${process.pid}`;
    server = await startFakeAnthropic(helperRuns(marker));
    const { queue, home, workers } = setUp(ONE('sleep'), 2);
    const run = runOn(queue, home);
    const running = () => execFileSync('ps', ['-eo', 'args']).toString().includes(marker);
    await until(running, 'the command running on a worker');
    const holder = workers.find((w) => w.output().includes('took turn 1 of @helper'))!;
    // The lock gone, as when the worker could not reach the Redis to renew it: BullMQ gives the job to another worker.
    const connection = new Redis(redis.url);
    try {
      const locks = await connection.keys(`bull:${queue}:*:lock`);
      expect(locks).toHaveLength(1);
      await connection.del(locks[0]!);
    } finally {
      connection.disconnect();
    }
    const lost = Date.now();
    await until(() => !running(), 'the command killed', 20_000);
    // BullMQ renews a lock every 2 s (LOCK_MS / 2): the first renewal that fails stops the turn.
    expect(Date.now() - lost, 'stopped when its renewal failed, not when the 30 s command ended').toBeLessThan(10_000);
    await until(() => holder.output().includes('lost its lock on turn 1 of @helper: stopped it; another worker takes it over'), 'the worker saying so', 10_000);
    expect(holder.output(), "BullMQ's own errors for it are not repeated").not.toMatch(/could not renew lock|Missing (key|lock)/);
    expect(await run.exited, run.output()).toBe(0);
    const result = events(home, resultOf(run).session).find((e) => e.type === 'tool_result' && e.tool === 'run_command');
    expect(result?.content).toMatch(/^The outcome of this run_command call is unknown/);
  }, 90_000);

  it('a worker killed -9 while its model call is in flight: the call is made again by the worker that takes over (the only call repeated), and the run completes', async () => {
    server = await startFakeAnthropic(helperRuns('echo ran > ran.txt', 3_000));
    const { queue, home, dirs, workers } = setUp(ONE('echo'), 2);
    const run = runOn(queue, home);
    await killHolder(workers, () => server!.of('helper').length === 1);
    expect(await run.exited, run.output()).toBe(0);
    expect(server.of('helper'), 'the call in flight, and only it, was made again').toHaveLength(3);
    const recorded = events(home, resultOf(run).session);
    expect(recorded.filter((e) => e.type === 'model_call' && e.agent === 'helper')).toHaveLength(2);
    expect(recorded.find((e) => e.type === 'tool_result')?.is_error).toBe(false);
    expect(dirs.filter((d) => existsSync(join(d, 'ran.txt')))).toHaveLength(1);
  }, 60_000);

  it('the only worker killed -9 mid-call: the coordinator says so within seconds, and a worker started later takes the turn over', async () => {
    server = await startFakeAnthropic(helperRuns('echo ran', 30_000));
    const { queue, home, dirs, workers } = setUp(ONE('echo'), 1);
    const run = runOn(queue, home);
    await until(() => server!.of('helper').length === 1, "the helper's call in flight");
    const killedAt = Date.now();
    workers[0]!.child.kill('SIGKILL');
    await until(() => run.output().includes('stopped answering'), 'the coordinator to say the worker stopped', 20_000);
    expect(Date.now() - killedAt, 'said within seconds, not at the next 30 s note').toBeLessThan(15_000);
    expect(run.output()).toMatch(/worker \S+ stopped answering for turn 1 of @helper \(its lock on the job lapsed\)/);
    worker(queue, dirs[0]!);
    expect(await run.exited, run.output()).toBe(0);
    // The first request was billed though its worker died: the run counts it, as a note beside the call made again.
    const recorded = events(home, resultOf(run).session);
    const abandoned = recorded.filter((e) => e.type === 'call_abandoned');
    expect(abandoned.map((e) => [e.agent, e.why])).toEqual([['helper', 'worker_lost']]);
    const answered = recorded.filter((e) => e.type === 'model_call').reduce((sum, e) => sum + Number(e.cost_usd), 0);
    expect((JSON.parse(run.stdout()) as { usage: { cost_usd: number } }).usage.cost_usd).toBeCloseTo(answered + Number(abandoned[0]!.cost_usd), 6);
  }, 90_000);

  it('a coordinator killed -9 mid-turn: conclave resume --workers reattaches to the same queue and the workers still running, and completes the run', async () => {
    server = await startFakeAnthropic(helperRuns('sleep 3; touch late.txt'));
    const { queue, home, workers } = setUp(ONE('sleep'), 2);
    const args = ['--json', '--workers', redis.url, '--queue', queue];
    const first = coordinator(['run', 'workflow.yml', '--session', 'run.jsonl', ...args], home);
    await until(() => server!.of('helper').length === 1 && Date.now() - server!.of('helper')[0]!.receivedAt > 300, "the helper's command under way");
    first.child.kill('SIGKILL');
    await first.exited;
    const resumed = coordinator(['resume', 'run.jsonl', ...args], home);
    expect(await resumed.exited, resumed.output()).toBe(0);
    expect(resultOf(resumed).status).toBe('idle');
    expect(server.of('helper'), 'the recorded call is not made again').toHaveLength(2);
    const recorded = events(home, 'run.jsonl');
    expect(recorded.some((e) => e.type === 'resumed')).toBe(true);
    expect(recorded.find((e) => e.type === 'tool_result')?.content).toMatch(
      /^The outcome of this run_command call is unknown: conclave was stopped while it ran/,
    );
    // The workers served the resumed run too, and went on to the end of it.
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
    expect(workers.map((w) => w.output()).join('')).toContain('took turn 2 of @lead');
  }, 60_000);

  it('a worker refuses a job from another workflow file or another conclave version, saying which; the run goes on with a worker that matches', async () => {
    server = await startFakeAnthropic({ lead: () => ({ text: 'Nothing to do.' }) });
    const { queue, home } = setUp(PAIR_WORKFLOW, 0);
    const run = runOn(queue, home);
    const changed = worker(queue, checkout(`${PAIR_WORKFLOW}# changed\n`));
    expect(await changed.exited).toBe(2);
    expect(changed.output()).toMatch(
      /conclave: refused \S+\/lead\/1: its workflow workflow.yml is not this worker's \(sha256 [0-9a-f]{12} on the coordinator, [0-9a-f]{12} here\): check out the same commit/,
    );
    const older = worker(queue, checkout(PAIR_WORKFLOW), { bin: otherVersionBuild('0.0.9') });
    expect(await older.exited).toBe(2);
    expect(older.output()).toMatch(
      /conclave: refused \S+\/lead\/1: it comes from conclave 0\.1\.0, and this worker is conclave 0\.0\.9: run the same version on both sides/,
    );
    expect(server.requests, 'no refusing worker called the model').toHaveLength(0);
    worker(queue, checkout(PAIR_WORKFLOW));
    expect(await run.exited, run.output()).toBe(0);
    expect(run.output()).toMatch(/conclave: warning: worker \S+ refused \S+\/lead\/1: it comes from conclave 0\.1\.0, and this worker is conclave 0\.0\.9/);
  }, 60_000);

  it('with no worker the coordinator says it waits for workers, and its timeout still ends the run', async () => {
    const { queue, home } = setUp(PAIR_WORKFLOW, 0);
    const startedAt = Date.now();
    const run = runOn(queue, home, '--timeout', '8s');
    expect(await run.exited, run.output()).toBe(3);
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    expect(run.output()).toContain(`conclave: warning: waiting for workers: 1 turn queued on "${queue}" at ${redis.url}, and no worker has taken it for`);
    expect(run.output()).toContain(`start one with: conclave worker ${redis.url} --queue ${queue}`);
    expect(resultOf(run).reason).toContain('timeout');
    // A worker started after the run ended has nothing to do, and says so.
    const late = worker(queue, checkout(PAIR_WORKFLOW));
    expect(await late.exited).toBe(0);
    expect(late.output()).toContain('the run has ended');
  }, 60_000);

  it('cancel reaches remote turns: the agents below the one cancelled stop on their workers, their commands killed', async () => {
    server = await startFakeAnthropic({
      lead: cancellingLead(2),
      'manager_t-1': SPAWNING_MANAGER,
      'worker_t-1': [{ tools: [{ name: 'run_command', input: { command: 'sleep 30; touch late.txt' } }] }],
      'worker_t-2': [{ tools: [{ name: 'run_command', input: { command: 'sleep 30; touch late.txt' } }] }],
    });
    const workflow = CANCEL_TEAM('{ tools: [run_command] }');
    // One turn per worker: the agents cancelled run on different workers.
    const { queue, home, dirs, workers } = setUp(workflow, 4);
    const startedAt = Date.now();
    const run = runOn(queue, home);
    expect(await run.exited, run.output()).toBe(0);
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    const recorded = events(home, resultOf(run).session);
    expect(recorded.filter((e) => e.type === 'agent_ended').map((e) => [e.agent, e.status])).toEqual([
      ['worker_t-2', 'cancelled'],
      ['worker_t-1', 'cancelled'],
      ['manager_t-1', 'cancelled'],
    ]);
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0, 0, 0]);
    const holders = ['worker_t-1', 'worker_t-2'].map((agent) => workers.findIndex((w) => w.output().includes(`took turn 1 of @${agent} `)));
    expect(holders[0]).not.toBe(holders[1]);
    expect(holders).not.toContain(-1);
    // The workers' commands were killed with their turns: none of them lived to write its file.
    await new Promise((r) => setTimeout(r, 500));
    expect(dirs.filter((d) => existsSync(join(d, 'late.txt')))).toEqual([]);
    expect(commandsRunning('sleep 30; touch late.txt')).toEqual([]);
  }, 60_000);

  it('a limit and SIGTERM reach the command a worker runs for the coordinator', async () => {
    server = await startFakeAnthropic({
      lead: () => ({ tools: [{ name: 'run_command', input: { command: 'sleep 30; touch late.txt' } }] }),
    });
    const queue = newQueue();
    const home = checkout(ONE('sleep').replace('lead: { role: manager }', 'lead: { role: manager, tools: [run_command] }'));
    const dir = checkout(readFileSync(join(home, 'workflow.yml'), 'utf8'));
    const serving = worker(queue, dir);
    const limited = runOn(queue, home, '--timeout', '3s');
    await until(() => commandsRunning('sleep 30; touch late.txt').length > 0, 'the command running on the worker');
    expect(await limited.exited, limited.output()).toBe(3);
    expect(resultOf(limited).reason).toMatch(/^limit reached: timeout/);
    await until(() => commandsRunning('sleep 30; touch late.txt').length === 0, 'the command killed at the limit', 10_000);
    expect(await serving.exited).toBe(0);
    const next = newQueue();
    worker(next, dir);
    const run = runOn(next, home);
    await until(() => commandsRunning('sleep 30; touch late.txt').length > 0, 'the command running on the worker');
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(143);
    await until(() => commandsRunning('sleep 30; touch late.txt').length === 0, 'the command killed at SIGTERM', 10_000);
  }, 60_000);

  it("a worker's answer that is no Messages API response fails the turn with a sentence, never reaching the session as an answer", async () => {
    const { queue, home } = setUp(PAIR_WORKFLOW, 0);
    const run = runOn(queue, home);
    // A hostile worker that holds the secret: it speaks the wire by hand and answers the model call with garbage.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const reader = connection.duplicate();
    const up = `conclave:${queue}:up`;
    const hostile = new Worker(
      queue,
      async (job) => {
        const incarnation = await connection.get(`conclave:${queue}:heartbeat`);
        await connection.rpush(up, JSON.stringify(sealed(up, { type: 'attached', job: job.id, token: 't', incarnation, worker: 'evil' })));
        const [, text] = (await reader.blpop(`conclave:${queue}:down:${job.id}:t`, 10))!;
        const { id } = JSON.parse((JSON.parse(text) as { body: string }).body) as { id: string };
        await connection.rpush(up, JSON.stringify(sealed(up, { type: 'result', job: job.id, id, value: { content: 'not blocks' } })));
      },
      { connection },
    );
    try {
      expect(await run.exited, run.output()).toBe(1);
      expect(resultOf(run).reason).toContain('worker evil sent an answer that is not a Messages API response');
      const recorded = events(home, resultOf(run).session);
      expect(recorded.some((e) => e.type === 'model_call')).toBe(false);
      expect(recorded.find((e) => e.type === 'turn_failed')?.error).toContain('worker evil sent an answer that is not a Messages API response');
    } finally {
      await hostile.close(true);
      reader.disconnect();
      connection.disconnect();
    }
  }, 60_000);

  it('a --workers that cannot be used is refused before anything runs: exit 2, no session file, no password shown', async () => {
    const home = checkout(PAIR_WORKFLOW);
    const refused = async (args: string[], cwd = home) => {
      const r = await conclave(['run', 'workflow.yml', ...args], { cwd, env: noKey });
      expect(r.code, r.stderr).toBe(2);
      expect(existsSync(join(cwd, '.conclave'))).toBe(false);
      return r.stderr;
    };
    expect(await refused(['--workers', 'http://127.0.0.1:6379'])).toContain("the workers' Redis must be a redis:// or rediss:// URL");
    expect(await refused(['--workers', 'redis://:sw0rdfish-pass@127.0.0.1:1'])).toMatch(
      /conclave: cannot reach the workers' Redis at redis:\/\/\*\*\*@127\.0\.0\.1:1: /,
    );
    expect(await refused(['--workers', 'redis://:sw0rdfish-pass@127.0.0.1:1'])).not.toContain('sw0rdfish');
    expect(await refused(['--workers', redis.url, '--queue', 'a:b'])).toContain('--queue must be letters, digits');
    // A database the server does not have (16 by default): refused, not taken for database 0.
    expect(await refused(['--workers', `${redis.url}/99`])).toContain(
      `the workers' Redis at ${redis.url}/99 cannot be used: database 99 (ERR DB index is out of range)`,
    );
    const worker99 = await conclave(['worker', `${redis.url}/99`], { cwd: home, env: { CONCLAVE_WORKERS_SECRET: SECRET } });
    expect([worker99.code, worker99.stderr]).toEqual([
      2,
      `conclave: the workers' Redis at ${redis.url}/99 cannot be used: database 99 (ERR DB index is out of range); name one the server has, such as /0\n`,
    ]);
    expect(await refused(['--queue', 'q'])).toContain('--queue names the queue of --workers');
    expect(await refused(['--workers', redis.url, '--replay', 'x.jsonl'])).toContain(
      '--replay calls no model and runs no tool: --workers has nothing to give it',
    );
    const outside = await conclave(['run', join(home, 'workflow.yml'), '--workers', redis.url, '--workspace', checkout(PAIR_WORKFLOW)], { env: noKey });
    expect(outside.stderr).toContain('with --workers the workflow file must be inside the workspace');
    const badWorker = await conclave(['worker', redis.url, '--concurrency', '0'], { cwd: home });
    expect([badWorker.code, badWorker.stderr]).toEqual([2, 'conclave: --concurrency must be a whole number from 1 to 64, not "0"\n']);
  }, 60_000);

  it("workers pace their calls under the API's rate limits (its headers, or --rate-limit); the coordinator shows and records the waits", async () => {
    server = await startFakeAnthropic(fanOutScript(6), { rateLimits: { requests: { limit: 3, windowMs: 1_500 } } });
    const { queue, home, workers } = setUp(FAN_OUT(6), 2, 4);
    const run = runOn(queue, home);
    expect(await run.exited, run.output()).toBe(0);
    expect(run.output()).toMatch(/@reviewer-\d+ waiting for the rate limit on requests/);
    const waits = events(home, resultOf(run).session).filter((e) => e.type === 'rate_waited');
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((e) => (e.waited_ms as number) > 0)).toBe(true);
    await Promise.all(workers.map((w) => w.exited));
    // --rate-limit on the worker: the third request of the minute waits, until the run's timeout.
    await server.close();
    server = await startFakeAnthropic(relayScript());
    const paced = newQueue();
    const relayHome = checkout(RELAY);
    const slow = startWorker(redis.url, paced, checkout(RELAY), { ...modelEnv(), CONCLAVE_RATE_LIMIT: 'rpm=2' });
    started.push(slow);
    const limited = runOn(paced, relayHome, '--timeout', '4s');
    expect(await limited.exited, limited.output()).toBe(3);
    expect(server.requests, 'two requests in the minute, the third waiting').toHaveLength(2);
  }, 60_000);

  it('the Redis gone mid-run: the turn that waits on it fails with a sentence after 15 s, the session stays whole, no driver noise', async () => {
    const own = await startRedis();
    try {
      server = await startFakeAnthropic(helperRuns('sleep 2'));
      const queue = newQueue();
      const home = checkout(ONE('sleep'));
      const lone = startWorker(own.url, queue, checkout(ONE('sleep')), modelEnv());
      started.push(lone);
      const run = startConclave(['run', 'workflow.yml', '--json', '--workers', own.url, '--queue', queue], home, noKey);
      started.push(run);
      await until(() => server!.of('helper').length === 1, "the helper's command under way");
      const killedAt = Date.now();
      await own.kill();
      expect(await run.exited, run.output()).toBe(1);
      expect(Date.now() - killedAt).toBeLessThan(40_000);
      const result = resultOf(run);
      expect(result.reason).toMatch(new RegExp(`the workers' Redis at ${own.url.replace(/[.]/g, '\\.')} has not answered for 15s`));
      expect(run.output()).not.toMatch(/Unhandled error|\n\s+at /);
      const shown = await conclave(['show', result.session], { cwd: home });
      expect(shown.code, shown.stderr).toBe(0);
    } finally {
      await own.kill();
    }
  }, 90_000);

  it('a Redis writer without the secret: a job it queues for the real workflow is not taken, nothing of it runs, and the worker goes on serving the real run', async () => {
    server = await startFakeAnthropic({
      lead: (r: RecordedRequest) => ({ text: r.call === 1 ? '@helper read it' : 'Done.' }),
      helper: (r: RecordedRequest) => (lastToolResult(r) ? { text: 'read' } : { tools: [{ name: 'read_file', input: { path: 'aws-token' } }] }),
    });
    const queue = newQueue();
    const dir = checkout(READER_WORKFLOW);
    writeFileSync(join(dir, 'aws-token'), 'AWS-WEB-IDENTITY-TOKEN');
    const lone = startWorker(redis.url, queue, dir, { ...modelEnv(), AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, 'aws-token') });
    started.push(lone);
    // The forger: the right version and workflow hash are public, the heartbeat key is writable.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const reader = connection.duplicate();
    const jobs = new Queue(queue, { connection });
    try {
      await connection.set(`conclave:${queue}:heartbeat`, 'forged', 'PX', 60_000);
      const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
      const sha256 = createHash('sha256').update(READER_WORKFLOW).digest('hex');
      const job = { run: 'x', agent: 'helper', turn: 1, version, workflow: { path: 'workflow.yml', sha256 }, providers: [], env: {} };
      await jobs.add('turn', job, { jobId: 'x/helper/1' });
      // The same job in a sealed envelope with a MAC made without the secret: not taken either.
      await jobs.add(
        'turn',
        { body: JSON.stringify({ ...job, turn: 2 }), mac: createHmac('sha256', 'guess').update('x').digest('hex') },
        { jobId: 'x/helper/2' },
      );
      await until(() => lone.output().includes('job x/helper/2 is not signed'), 'the worker to refuse the forged jobs', 20_000);
      expect(lone.output()).toContain("job x/helper/1 is not signed with this worker's CONCLAVE_WORKERS_SECRET: not taken");
      expect(await reader.blpop(`conclave:${queue}:up`, 2), 'the worker never attached to a forged job').toBeNull();
      await connection.del(`conclave:${queue}:heartbeat`);
      // The real run on the same queue: the worker took no harm from the forgeries.
      const home = checkout(READER_WORKFLOW);
      const run = runOn(queue, home);
      expect(await run.exited, run.output()).toBe(0);
      const results = events(home, resultOf(run).session).filter((e) => e.type === 'tool_result');
      expect(JSON.stringify(results)).toContain("aws-token holds a credential of this run's model provider; the workspace tools do not read it");
      expect(JSON.stringify(events(home, resultOf(run).session))).not.toContain('AWS-WEB-IDENTITY-TOKEN');
    } finally {
      await jobs.close();
      reader.disconnect();
      connection.disconnect();
    }
  }, 60_000);

  it("a job signed with the secret that names no provider still leaves every cloud credential hidden, and a forged operation runs only a workspace tool the worker's own workflow gives", async () => {
    const queue = newQueue();
    const dir = checkout(READER_WORKFLOW);
    writeFileSync(join(dir, 'aws-token'), 'AWS-WEB-IDENTITY-TOKEN');
    writeFileSync(join(dir, 'gha-creds-1234.json'), '{"type":"external_account","token":"GOOGLE-TOKEN"}');
    const lone = startWorker(redis.url, queue, dir, {
      ...modelEnv(),
      AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, 'aws-token'),
      GOOGLE_GHA_CREDS_PATH: join(dir, 'gha-creds-1234.json'),
    });
    started.push(lone);
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const reader = connection.duplicate();
    const jobs = new Queue(queue, { connection });
    const up = `conclave:${queue}:up`;
    try {
      await connection.set(`conclave:${queue}:heartbeat`, 'forged', 'PX', 60_000);
      const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
      const sha256 = createHash('sha256').update(READER_WORKFLOW).digest('hex');
      await jobs.add(
        'turn',
        sealed(`job ${queue} x/helper/1`, { run: 'x', agent: 'helper', turn: 1, version, workflow: { path: 'workflow.yml', sha256 }, providers: [], env: {} }),
        { jobId: 'x/helper/1' },
      );
      const [, attached] = (await reader.blpop(up, 20))!;
      const { token } = JSON.parse((JSON.parse(attached) as { body: string }).body) as { token: string };
      const down = `conclave:${queue}:down:x/helper/1:${token}`;
      const answer = async (id: string, op: unknown) => {
        await connection.rpush(down, JSON.stringify(sealed(down, { type: 'op', id, op })));
        const [, text] = (await reader.blpop(up, 20))!;
        return JSON.parse((JSON.parse(text) as { body: string }).body) as { id: string; value: { content: string } };
      };
      expect((await answer('f1', { kind: 'tool', agent: 'helper', name: 'read_file', input: { path: 'aws-token' } })).value.content).toContain(
        'holds a credential',
      );
      expect((await answer('f2', { kind: 'tool', agent: 'helper', name: 'read_file', input: { path: 'gha-creds-1234.json' } })).value.content).toContain(
        'holds a credential',
      );
      expect(await answer('f3', { kind: 'tool', agent: 'helper', name: 'run_command', input: { command: 'touch pwned' } })).toMatchObject({
        id: 'f3',
        value: { content: 'Not run: no agent of this workflow has the workspace tool "run_command".', isError: true },
      });
      expect(existsSync(join(dir, 'pwned'))).toBe(false);
      // An operation unsigned, or pushed again as it was, does nothing.
      await connection.rpush(
        down,
        JSON.stringify({ type: 'op', id: 'f4', op: { kind: 'tool', agent: 'helper', name: 'read_file', input: { path: 'workflow.yml' } } }),
      );
      await connection.rpush(
        down,
        JSON.stringify(sealed(down, { type: 'op', id: 'f1', op: { kind: 'tool', agent: 'helper', name: 'read_file', input: { path: 'workflow.yml' } } })),
      );
      expect(await reader.blpop(up, 3), 'no answer to an unsigned or repeated operation').toBeNull();
      await connection.rpush(down, JSON.stringify(sealed(down, { type: 'done' })));
      await until(() => lone.output().includes('turn 1 of @helper is over'), 'the forged turn over');
    } finally {
      await jobs.close();
      reader.disconnect();
      connection.disconnect();
    }
  }, 60_000);

  it("a provider's failure on a worker keeps its kind: a key the API refuses is exit 4, and a prompt too long is compacted and sent again", async () => {
    server = await startFakeAnthropic(pingPongScript(2000), { maxPromptTokens: 30_000 });
    const workflow = pingPongWorkflow({ maxTurns: 70 });
    const queue = newQueue();
    worker(queue, checkout(workflow));
    const home = checkout(workflow);
    const run = runOn(queue, home);
    expect(await run.exited, run.output()).toBe(3);
    const recorded = events(home, resultOf(run).session);
    expect(recorded.filter((e) => e.type === 'context_exceeded').length, resultOf(run).reason).toBeGreaterThanOrEqual(1);
    expect(recorded.filter((e) => e.type === 'context_compacted' && e.reason === 'too_long').length).toBeGreaterThanOrEqual(1);
    // A worker whose key the API refuses: the provider failed (exit 4), not the run.
    const refusedQueue = newQueue();
    started.push(startWorker(redis.url, refusedQueue, checkout(PAIR_WORKFLOW), { ...modelEnv(), ANTHROPIC_API_KEY: 'sk-ant-not-the-key-0000' }));
    const refusedHome = checkout(PAIR_WORKFLOW);
    const refused = runOn(refusedQueue, refusedHome);
    expect(await refused.exited, refused.output()).toBe(4);
    expect(resultOf(refused).reason).toMatch(/^@lead failed: .*401/);
  }, 90_000);

  it('--workers and conclave worker without CONCLAVE_WORKERS_SECRET, or with a short one, are refused before anything runs', async () => {
    const home = checkout(PAIR_WORKFLOW);
    for (const secret of ['', 'short']) {
      const run = await conclave(['run', 'workflow.yml', '--workers', redis.url], { cwd: home, env: { ...noKey, CONCLAVE_WORKERS_SECRET: secret } });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(
        secret ? /CONCLAVE_WORKERS_SECRET is 5 characters long: it must have at least 32/ : /--workers needs CONCLAVE_WORKERS_SECRET: the same random value/,
      );
      expect(existsSync(join(home, '.conclave'))).toBe(false);
      const worker = await conclave(['worker', redis.url], { cwd: home, env: { CONCLAVE_WORKERS_SECRET: secret } });
      expect(worker.code, worker.stderr).toBe(2);
      expect(worker.stderr).toContain('CONCLAVE_WORKERS_SECRET');
    }
  }, 60_000);
});

/** A lead and a helper that may read files (a credential file among them, as auth actions leave them in the workspace). */
const READER_WORKFLOW = `
name: reader
defaults: { max_tokens: 1024 }
agents:
  lead: { role: manager }
  helper: { role: worker, tools: [read_file] }
kickoff: Start.
`;

const PAIR_WORKFLOW = `
name: pair
defaults: { max_tokens: 1024 }
agents:
  lead: { role: manager }
  helper: { role: worker }
kickoff: Start.
`;

/**
 * Processes whose command line is `sh -c COMMAND` (a run_command of a test, wherever it runs) and
 * that run in this test run's own directories: another suite running beside this one runs the same
 * commands in its own.
 */
function commandsRunning(command: string): string[] {
  const ours = tmpdir();
  return readdirSync('/proc').flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return [];
    try {
      const line = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      return line.includes(command) && !line.includes('bwrap') && readlinkSync(`/proc/${pid}/cwd`).startsWith(ours) ? [pid] : [];
    } catch {
      return [];
    }
  });
}
