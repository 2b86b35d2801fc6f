import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../src/provider/client.js';
import { type GivenLimits, Pacer } from '../../src/provider/rates/pacer.js';
import { ProviderError } from '../../src/provider/provider-errors.js';
import { localLimiters } from '../../src/provider/rates/rate-limiters.js';
import { WorkerPool } from '../../src/workers/coordinator.js';
import { another, openRedis } from '../../src/workers/redis.js';
import { Signer } from '../../src/workers/signing.js';
import type { RemoteTurn } from '../../src/workers/remote-turn.js';
import { HEARTBEAT_MS, jobPlace, keysOf, messageOf, type Up } from '../../src/workers/wire.js';
import { serveTurns, type ServeOptions } from '../../src/workers/worker.js';
import { FAKE_API_KEY_PREFIX, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { missingStores, startRedis, type StoreServer } from '../helpers/stores.js';

/**
 * The coordinator's side and the worker's (docs/workers.md), from source, in one process: a real
 * Redis and BullMQ between them, the real SDK against the fake API. The CLI tests
 * (test/e2e/workers.test.ts) run them as processes; these reach what a mutant changes inside them.
 */
const missing = missingStores();
if (missing && process.env.CONCLAVE_REQUIRE_STORES) throw new Error(`the worker tests must run here, but ${missing}`);

const SECRET = 'w'.repeat(40);
const WORKFLOW = `
name: remote
agents:
  lead: { role: manager, tools: [read_file] }
kickoff: Go.
`;
const WORKER = `${hostname()}-${process.pid}`;
const REQUEST = { model: 'claude-haiku-4-5', max_tokens: 20, system: 'You are @lead, the lead.', messages: [{ role: 'user', content: 'hi' }] } as ModelRequest;

describe.skipIf(missing !== undefined)('turns on a worker, coordinator and worker in one process', () => {
  let redis: StoreServer;
  let fake: FakeAnthropic;
  let workspace: string;
  let queues = 0;
  let overloaded = false;

  beforeAll(async () => {
    redis = await startRedis();
    fake = await startFakeAnthropic({
      lead: (request) => {
        if (request.body.max_tokens === 31) return { text: 'late', delayMs: 20_000 };
        if (request.body.max_tokens === 37) return { text: 'late', delayMs: 3_000 };
        if (request.body.max_tokens === 13) return { error: { status: 400, type: 'invalid_request_error', message: 'no such thing' } };
        // max_tokens 29: a stream that breaks once, then an answer.
        if (request.body.max_tokens === 29 && !overloaded) {
          overloaded = true;
          return { midStreamError: { type: 'overloaded_error', message: 'Overloaded' } };
        }
        return { text: 'hello' };
      },
    });
    // The SDK reads its base URL from the process's environment, as in a worker's own process.
    process.env.ANTHROPIC_BASE_URL = fake.url;
    workspace = mkdtempSync(join(tmpdir(), 'conclave-workers-unit-'));
    writeFileSync(join(workspace, 'workflow.yml'), WORKFLOW);
    writeFileSync(join(workspace, 'notes.txt'), 'the token is tok-SECRET-1\n');
  }, 60_000);

  afterAll(async () => {
    delete process.env.ANTHROPIC_BASE_URL;
    await fake?.close();
    await redis?.kill();
  });

  /** A coordinator for a fresh queue, and a worker beside it; what each said. */
  async function pair(
    options: {
      version?: string;
      workerSecret?: string;
      idleTimeoutMs?: number;
      lostAfterMs?: number;
      start?: boolean;
      api?: FakeAnthropic;
      redisUrl?: string;
      given?: GivenLimits;
    } = {},
  ) {
    const url = options.redisUrl ?? redis.url;
    const queue = `unit-${++queues}`;
    const warned: string[] = [];
    const logged: string[] = [];
    const coordinatorRedis = await openRedis(url);
    const jobs = new Queue(queue, { connection: coordinatorRedis }).on('error', () => {});
    const sha256 = createHash('sha256').update(WORKFLOW).digest('hex');
    const pool = new WorkerPool(
      coordinatorRedis,
      another(coordinatorRedis),
      jobs,
      { run: 'run1', version: '1.0.0', workflow: { path: 'workflow.yml', sha256 }, providers: ['anthropic'], queue, shownUrl: 'redis://shown' },
      new Signer(SECRET),
      (m) => warned.push(m),
    );
    if (options.start !== false) await pool.start();
    const controller = new AbortController();
    const workerRedis = await openRedis(url);
    const serveOptions: ServeOptions = {
      redis: workerRedis,
      queue,
      signer: new Signer(options.workerSecret ?? SECRET),
      concurrency: 2,
      idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
      ...(options.lostAfterMs !== undefined ? { lostAfterMs: options.lostAfterMs } : {}),
      workspace,
      env: { ANTHROPIC_API_KEY: `${FAKE_API_KEY_PREFIX}unit`, ANTHROPIC_BASE_URL: (options.api ?? fake).url },
      version: options.version ?? '1.0.0',
      warn: (m) => logged.push(`warn: ${m}`),
      pacerFor: async () => ({ pacer: new Pacer(() => options.given ?? {}, localLimiters), close: async () => {} }),
      log: (line) => logged.push(line),
      mask: (text) => text.replaceAll('tok-SECRET-1', '***'),
      signal: controller.signal,
    };
    const serving = () => serveTurns(serveOptions).finally(() => workerRedis.disconnect());
    return { pool, queue, warned, logged, controller, serving, jobs, coordinatorRedis };
  }

  it('a model call and a workspace tool run on the worker; what the tool printed is masked there; the turn ends on both sides', async () => {
    const { pool, logged, serving, controller } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const answer = await turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
      expect(answer.content).toEqual([expect.objectContaining({ type: 'text', text: 'hello' })]);
      const read = await turn.tool({ id: 't1', name: 'read_file', input: { path: 'notes.txt' } }, true, new AbortController().signal);
      expect(read.content).toContain('the token is ***');
      expect(read.content).not.toContain('tok-SECRET-1');
      const refused = await turn.tool({ id: 't2', name: 'run_command', input: { command: 'id' } }, false, new AbortController().signal);
      expect(refused).toEqual({ content: 'Not run: no agent of this workflow has the workspace tool "run_command".', isError: true });
      await turn.end();
      await until(() => logged.includes('turn 1 of @lead is over'), 'the worker to finish the turn');
      expect(logged).toContain('took turn 1 of @lead (run run1)');
    } finally {
      await pool.close();
      controller.abort();
    }
    expect(await served).toMatchObject({ turns: 1 });
  }, 60_000);

  it("a provider's refusal on the worker reaches the coordinator with its kind and status", async () => {
    const { pool, serving, controller } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const failed = await turn.call({ ...REQUEST, max_tokens: 13 }, new AbortController().signal, {}, 'anthropic').catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(ProviderError);
      expect(failed).toMatchObject({ kind: 'request', status: 400 });
      await turn.end();
    } finally {
      await pool.close();
      controller.abort();
    }
    await served;
  }, 60_000);

  it('a worker of another version refuses the job, says so once, and stops; the coordinator warns', async () => {
    const { pool, warned, logged, serving } = await pair({ version: '9.9.9' });
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      void turn.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch(() => {});
      const served = await serving();
      expect(served).toMatchObject({ code: 'refused', turns: 0 });
      expect((served as { reason: string }).reason).toBe(
        'refused run1/lead/1: it comes from conclave 1.0.0, and this worker is conclave 9.9.9: run the same version on both sides',
      );
      await until(() => warned.length > 0, 'the coordinator to hear the refusal');
      expect(warned).toEqual([
        `worker ${WORKER} refused run1/lead/1: it comes from conclave 1.0.0, and this worker is conclave 9.9.9: run the same version on both sides`,
      ]);
      expect(logged.filter((l) => l.startsWith('took') || l.includes('given up'))).toEqual([]);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('a job not signed with the worker’s secret runs nothing; what the worker says is not heard by the coordinator either', async () => {
    const { pool, warned, logged, serving, controller } = await pair({ workerSecret: 'x'.repeat(40) });
    const served = serving();
    const requestsBefore = fake.requests.length;
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      void turn.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch(() => {});
      await until(() => logged.some((l) => l.includes('not signed')), 'the worker to refuse the job');
      expect(logged.filter((l) => l.includes('not signed'))).toEqual([
        "warning: job run1/lead/1 is not signed with this worker's CONCLAVE_WORKERS_SECRET: not taken (a coordinator with another secret, or a forgery)",
      ]);
      expect(logged.filter((l) => l.startsWith('took') || l.includes('given up'))).toEqual([]);
      expect(fake.requests.length).toBe(requestsBefore);
      expect(warned).toEqual([]);
    } finally {
      controller.abort();
      await pool.close();
    }
    expect(await served).toEqual({ code: 'interrupted', turns: 0 });
  }, 60_000);

  it("a signed job that is no turn, or holds another job's turn, is given up and said; nothing of it runs", async () => {
    const { pool, logged, serving, controller, jobs, queue } = await pair();
    const signer = new Signer(SECRET);
    const served = serving();
    try {
      await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/x/1'), { run: 'run1', agent: 'x' }), { jobId: 'run1/x/1', removeOnFail: true });
      const other = { run: 'run1', agent: 'lead', turn: 2, version: '1.0.0', workflow: pool.identity.workflow, providers: ['anthropic'], env: {} };
      await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/y/1'), other), { jobId: 'run1/y/1', removeOnFail: true });
      await until(() => logged.filter((l) => l.includes('given up')).length === 2, 'both jobs to be given up');
      expect(logged.filter((l) => l.includes('given up')).sort()).toEqual([
        'turn run1/x/1 given up: job run1/x/1 is not a conclave turn: "data.turn" must be a whole number; found nothing',
        'turn run1/y/1 given up: job run1/y/1 holds the turn of another job',
      ]);
      expect(logged.filter((l) => l.startsWith('took'))).toEqual([]);
    } finally {
      controller.abort();
      await pool.close();
    }
    expect(await served).toEqual({ code: 'interrupted', turns: 0 });
  }, 60_000);

  it("a call the API refuses for a while is retried on the worker, and the coordinator's listeners hear of it", async () => {
    const { pool, serving, controller } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const retries: number[] = [];
      let sent = 0;
      const answer = await turn.call(
        { ...REQUEST, max_tokens: 29 },
        new AbortController().signal,
        { inputTokens: 7, onRetry: (_e, ms) => void retries.push(ms), onSent: () => void sent++ },
        'anthropic',
      );
      expect(answer.content).toEqual([expect.objectContaining({ text: 'hello' })]);
      expect(retries).toHaveLength(1);
      expect(sent).toBeGreaterThanOrEqual(1);
      await turn.end();
    } finally {
      await pool.close();
      controller.abort();
    }
    await served;
  }, 60_000);

  it("a call paced on the worker by the API's limit is heard by the coordinator's listeners: the wait, and how long it took", async () => {
    // One request per 3 s: the first answer says none is left, and the second call waits on the worker for its refill.
    const limited = await startFakeAnthropic({ lead: () => ({ text: 'hello' }) }, { rateLimits: { requests: { limit: 1, windowMs: 3_000 } } });
    process.env.ANTHROPIC_BASE_URL = limited.url;
    const { pool, serving, controller } = await pair({ api: limited });
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const waits: [string, number][] = [];
      const paced: [number, string][] = [];
      const listeners = {
        onWait: (reason: string, ms: number) => void waits.push([reason, ms]),
        onPaced: (ms: number, reason: string) => void paced.push([ms, reason]),
      };
      await turn.call(REQUEST, new AbortController().signal, listeners, 'anthropic');
      expect(waits).toEqual([]);
      await turn.call(REQUEST, new AbortController().signal, listeners, 'anthropic');
      expect(waits.length).toBeGreaterThanOrEqual(1);
      expect(waits[0]![0]).toBe('requests');
      expect(waits[0]![1]).toBeGreaterThan(0);
      expect(paced).toHaveLength(1);
      expect(paced[0]![1]).toBe('requests');
      expect(paced[0]![0]).toBeGreaterThan(500);
      expect(limited.refusals).toBe(0);
      expect(limited.requests).toHaveLength(2);
      await turn.end();
    } finally {
      await pool.close();
      controller.abort();
      await limited.close();
      process.env.ANTHROPIC_BASE_URL = fake.url;
    }
    await served;
  }, 60_000);

  it('a call the coordinator aborts is aborted on the worker: its request to the API is dropped, and the turn goes on', async () => {
    const { pool, serving, controller } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const asked = fake.requests.length;
      const stop = new AbortController();
      const call = turn.call({ ...REQUEST, max_tokens: 31 }, stop.signal, {}, 'anthropic').catch((e: unknown) => e);
      await until(() => fake.requests.length > asked, 'the worker to send the request');
      stop.abort();
      expect(await call).toBeInstanceOf(Error);
      const request = fake.requests[asked]!;
      await until(() => request.droppedAt !== undefined, 'the worker to drop the request');
      expect(request.answeredAt).toBeUndefined();
      const answer = await turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
      expect(answer.content).toEqual([expect.objectContaining({ text: 'hello' })]);
      await turn.end();
    } finally {
      await pool.close();
      controller.abort();
    }
    await served;
  }, 60_000);

  it('a worker serves as many turns at once as its concurrency', async () => {
    const { pool, serving, controller } = await pair();
    const served = serving();
    try {
      const asked = fake.requests.length;
      const turns = [1, 2].map((n) => pool.open('lead', n, {}) as RemoteTurn);
      // Two calls of 3 s each on a worker of concurrency 2: both are asked before either is answered.
      const calls = turns.map((turn) => turn.call({ ...REQUEST, max_tokens: 37 }, new AbortController().signal, {}, 'anthropic'));
      await until(() => fake.requests.length >= asked + 2, 'both turns to call the API');
      expect(fake.requests.slice(asked).every((r) => r.answeredAt === undefined)).toBe(true);
      await Promise.all(calls);
      await Promise.all(turns.map((turn) => turn.end()));
    } finally {
      await pool.close();
      controller.abort();
    }
    expect(await served).toMatchObject({ turns: 2 });
  }, 60_000);

  it('a worker stopped while a call is in hand drops the call and leaves its turn to others', async () => {
    const { pool, serving, controller, logged } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const asked = fake.requests.length;
      void turn.call({ ...REQUEST, max_tokens: 31 }, new AbortController().signal, {}, 'anthropic').catch(() => {});
      await until(() => fake.requests.length > asked, 'the worker to send the request');
      const stopped = Date.now();
      controller.abort();
      expect(await served).toEqual({ code: 'interrupted', turns: 1 });
      // Not held by the turn in hand (BullMQ's close would wait for it): a bound that catches the wait, not a timing.
      expect(Date.now() - stopped).toBeLessThan(4_000);
      await until(() => fake.requests[asked]!.droppedAt !== undefined, 'the worker to drop the request');
      expect(logged.filter((l) => l.includes('is over') || l.includes('given up'))).toEqual([]);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('a worker that loses its lock on a turn stops it and says so; the error BullMQ raises for it is not said again', async () => {
    const { pool, logged, serving, controller, coordinatorRedis, queue } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const asked = fake.requests.length;
      // max_tokens 31: an answer that takes 20 s, so that the turn is in hand when its lock goes.
      void turn.call({ ...REQUEST, max_tokens: 31 }, new AbortController().signal, {}, 'anthropic').catch(() => {});
      await until(() => logged.includes('took turn 1 of @lead (run run1)'), 'the worker to take the turn');
      await until(() => fake.requests.length > asked, 'the worker to send the request');
      await coordinatorRedis.del(`bull:${queue}:run1/lead/1:lock`);
      await until(() => logged.some((l) => l.startsWith('lost its lock')), 'the worker to see its lock lost', 30_000);
      expect(logged.filter((l) => l.startsWith('lost its lock'))).toEqual(['lost its lock on turn 1 of @lead: stopped it; another worker takes it over']);
      expect(logged.filter((l) => l.startsWith('warning:') && l.includes('run1/lead/1'))).toEqual([]);
      // What the turn was doing here stops: its call to the API is dropped, and the turn is not given up (others take it).
      await until(() => fake.requests[asked]!.droppedAt !== undefined, 'the worker to drop the request');
      expect(logged.filter((l) => l.includes('given up'))).toEqual([]);
    } finally {
      controller.abort();
      await pool.close();
    }
    await served;
  }, 60_000);

  it("a turn whose coordinator is gone, or never came, is given up by the worker after the heartbeat's life", async () => {
    const { pool, logged, serving, controller, jobs, queue, coordinatorRedis } = await pair({ start: false });
    const signer = new Signer(SECRET);
    const served = serving();
    try {
      const job = { run: 'run1', agent: 'lead', turn: 1, version: '1.0.0', workflow: pool.identity.workflow, providers: ['anthropic'], env: {} };
      await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/lead/1'), job), { jobId: 'run1/lead/1', removeOnFail: true });
      await until(() => logged.some((l) => l.includes('given up')), 'the worker to give the turn up', 30_000);
      expect(logged.filter((l) => l.includes('given up'))).toEqual(['turn run1/lead/1 given up: no coordinator runs this queue']);
      // A coordinator that was there and went: its heartbeat expires, and the turn is given up too.
      await coordinatorRedis.set(keysOf(queue).heartbeat, 'gone-soon', 'PX', 1_000);
      await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/lead/2'), { ...job, turn: 2 }), { jobId: 'run1/lead/2', removeOnFail: true });
      await until(() => logged.some((l) => l.startsWith('turn run1/lead/2 given up')), 'the second turn to be given up', 40_000);
      expect(logged.filter((l) => l.startsWith('turn run1/lead/2 given up'))).toEqual(['turn run1/lead/2 given up: the coordinator is gone']);
    } finally {
      controller.abort();
      await pool.close();
    }
    await served;
  }, 90_000);

  it("a turn waits for a coordinator that starts late, and is not given up while its coordinator's heartbeat is missing for less than its life", async () => {
    const { pool, logged, serving, controller, jobs, queue, coordinatorRedis } = await pair({ start: false });
    const signer = new Signer(SECRET);
    const keys = keysOf(queue);
    const served = serving();
    const gap = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      // This test plays the coordinator: its heartbeat is set, taken away and set again by hand.
      const job = { run: 'run1', agent: 'lead', turn: 1, version: '1.0.0', workflow: pool.identity.workflow, providers: ['anthropic'], env: {} };
      await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/lead/1'), job), { jobId: 'run1/lead/1', removeOnFail: true });
      await until(() => logged.includes('took turn 1 of @lead (run run1)'), 'the worker to take the turn');
      await gap(1_500);
      await coordinatorRedis.set(keys.heartbeat, 'incarnation-1');
      const attached = async () =>
        (await coordinatorRedis.lrange(keys.up, 0, -1)).map((text) => messageOf<Up>(signer.openText(keys.up, text))).filter((m) => m?.type === 'attached');
      await until(async () => (await attached()).length === 1, 'the worker to attach to the late coordinator');
      expect(await attached()).toEqual([expect.objectContaining({ job: 'run1/lead/1', incarnation: 'incarnation-1' })]);
      // Missing for 2.5 s (the worker looks every second), back, and missing again more than the heartbeat's life after it first went.
      const firstGone = Date.now();
      await coordinatorRedis.del(keys.heartbeat);
      await gap(2_500);
      await coordinatorRedis.set(keys.heartbeat, 'incarnation-1');
      await gap(HEARTBEAT_MS - (Date.now() - firstGone) + 500);
      await coordinatorRedis.del(keys.heartbeat);
      await gap(2_500);
      await coordinatorRedis.set(keys.heartbeat, 'incarnation-1');
      await gap(1_500);
      expect(logged.filter((l) => l.includes('given up'))).toEqual([]);
      expect(await attached()).toHaveLength(1);
    } finally {
      controller.abort();
      await pool.close();
    }
    expect(await served).toEqual({ code: 'interrupted', turns: 1 });
  }, 60_000);

  it('a worker does each operation on its list once, ignores what is not signed or has no id, and says nothing of one aborted', async () => {
    const { pool, logged, serving, controller, jobs, queue, coordinatorRedis } = await pair({ start: false });
    const signer = new Signer(SECRET);
    const keys = keysOf(queue);
    const served = serving();
    const said = async () => (await coordinatorRedis.lrange(keys.up, 0, -1)).map((text) => messageOf<Up>(signer.openText(keys.up, text))!);
    try {
      // This test plays the coordinator: it pushes onto the worker's list what a coordinator would, and more.
      await coordinatorRedis.set(keys.heartbeat, 'incarnation-1');
      const job = { run: 'run1', agent: 'lead', turn: 1, version: '1.0.0', workflow: pool.identity.workflow, providers: ['anthropic'], env: {} };
      await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/lead/1'), job), { jobId: 'run1/lead/1', removeOnFail: true });
      await until(async () => (await said()).some((m) => m.type === 'attached'), 'the worker to attach');
      const { token } = (await said()).find((m) => m.type === 'attached') as { token: string };
      const down = keys.down('run1/lead/1', token);
      const push = (message: unknown) => coordinatorRedis.rpush(down, signer.sealText(down, message));
      const call = (max_tokens: number) => ({ kind: 'call', request: { ...REQUEST, max_tokens }, provider: 'anthropic', inputTokens: 5 });
      const asked = fake.requests.length;
      await push({ type: 'op', id: 'slow', op: call(31) });
      await until(() => fake.requests.length > asked, 'the slow call to be sent');
      await push({ type: 'abort', id: 'slow' });
      await until(() => fake.requests[asked]!.droppedAt !== undefined, 'the slow call to be dropped');
      await coordinatorRedis.rpush(down, 'not signed at all');
      await push({ type: 'op', id: 7, op: call(20) });
      await push({ type: 'op', id: 'once', op: call(20) });
      await push({ type: 'op', id: 'once', op: call(20) });
      await push({ type: 'op', id: 'read', op: { kind: 'tool', agent: 'lead', name: 'read_file', input: { path: 'notes.txt' } } });
      await until(async () => (await said()).filter((m) => m.type === 'result').length === 2, 'both operations to be done');
      await push({ type: 'done' });
      await until(() => logged.includes('turn 1 of @lead is over'), 'the turn to end');
      expect(fake.requests.length).toBe(asked + 2);
      const ends = (await said()).filter((m) => m.type === 'result' || m.type === 'failed');
      expect(ends.map((m) => [m.type, (m as { id: string }).id]).sort()).toEqual([
        ['result', 'once'],
        ['result', 'read'],
      ]);
      expect(JSON.stringify(ends)).toContain('the token is ***');
    } finally {
      controller.abort();
      await pool.close();
    }
    await served;
  }, 60_000);

  it('a message on the list that is not signed is ignored, said once', async () => {
    const { pool, warned, coordinatorRedis, queue } = await pair();
    try {
      const up = keysOf(queue).up;
      await coordinatorRedis.rpush(up, JSON.stringify({ type: 'refused', job: 'x', worker: 'forger', reason: 'lies' }));
      await coordinatorRedis.rpush(up, 'not json at all');
      await until(() => warned.length > 0, 'the warning');
      await new Promise((r) => setTimeout(r, 1_500));
      expect(warned).toEqual([
        `a message on "${queue}" at redis://shown is not signed with this run's CONCLAVE_WORKERS_SECRET: ignored (a worker with another secret, or a forgery)`,
      ]);
    } finally {
      await pool.close();
    }
  }, 30_000);

  it('a worker with nothing to do exits when the run has ended, or when it has been idle too long', async () => {
    // Ended before the worker came: said at once, before any idleness counts.
    const ended = await pair({ idleTimeoutMs: 500 });
    await ended.pool.close();
    expect(await ended.serving()).toEqual({ code: 'ended', turns: 0 });
    // Ended while the worker waits for turns.
    const waiting = await pair();
    const served = waiting.serving();
    await new Promise((r) => setTimeout(r, 1_200));
    await waiting.pool.close();
    expect(await served).toEqual({ code: 'ended', turns: 0 });
    const idle = await pair({ idleTimeoutMs: 500 });
    try {
      expect(await idle.serving()).toEqual({ code: 'idle', turns: 0 });
    } finally {
      await idle.pool.close();
    }
  }, 30_000);

  it('a worker is not idle while a turn is in hand, and its idleness counts from the end of its last turn', async () => {
    const { pool, serving } = await pair({ idleTimeoutMs: 2_500 });
    const served = serving();
    try {
      // A call of 3 s, longer than the worker may be idle: the turn in hand keeps it.
      const first = pool.open('lead', 1, {}) as RemoteTurn;
      const late = await first.call({ ...REQUEST, max_tokens: 37 }, new AbortController().signal, {}, 'anthropic');
      expect(late.content).toEqual([expect.objectContaining({ text: 'late' })]);
      await first.end();
      // Idle for 1.2 s: less than its limit counted from the turn's end, more than a watch's tick.
      await new Promise((r) => setTimeout(r, 1_200));
      const second = pool.open('lead', 2, {}) as RemoteTurn;
      const answer = await Promise.race([
        second.call(REQUEST, new AbortController().signal, {}, 'anthropic'),
        served.then((s) => ({ content: `the worker left first: ${JSON.stringify(s)}` })),
      ]);
      expect(answer.content).toEqual([expect.objectContaining({ text: 'hello' })]);
      await second.end();
      expect(await served).toEqual({ code: 'idle', turns: 2 });
    } finally {
      await pool.close();
    }
  }, 60_000);

  it("a worker whose Redis goes away stops once it has not answered for the time given, and says each of BullMQ's errors once", async () => {
    const own = await startRedis();
    const { pool, serving, logged } = await pair({ redisUrl: own.url, lostAfterMs: 1_500 });
    const served = serving();
    try {
      await new Promise((r) => setTimeout(r, 500));
      await own.kill();
      const started = Date.now();
      const result = await served;
      expect(result).toMatchObject({ code: 'lost', turns: 0 });
      expect((result as { reason: string }).reason).toMatch(/^the workers' Redis has not answered for 1\.5s \(.+\): the turns this worker held go to others$/);
      expect(Date.now() - started).toBeLessThan(15_000);
      const warnings = logged.filter((l) => l.startsWith('warning:'));
      // BullMQ raises the refused connection on every attempt to reconnect: said once.
      expect(warnings.filter((w) => w.includes('ECONNREFUSED'))).toHaveLength(1);
      expect(new Set(warnings).size).toBe(warnings.length);
    } finally {
      await pool.close();
      await own.kill();
    }
  }, 60_000);

  it('a turn no worker takes is said after a few seconds; a job lost from the queue is queued again; an ended turn takes its job back', async () => {
    const { pool, warned, jobs, queue } = await pair();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      void turn.call(REQUEST, new AbortController().signal, {}, 'anthropic').catch(() => {});
      await until(async () => (await jobs.getJobState('run1/lead/1')) === 'waiting', 'the job to be queued');
      await jobs.remove('run1/lead/1');
      await until(async () => (await jobs.getJobState('run1/lead/1')) === 'waiting', 'the lost job to be queued again');
      await until(() => warned.length > 0, 'the note that no worker took the turn');
      expect(warned[0]).toMatch(
        new RegExp(
          `^waiting for workers: 1 turn queued on "${queue}" at redis://shown, and no worker has taken it for [5-9]s; start one with: conclave worker ` +
            `redis://shown --queue ${queue}$`,
        ),
      );
      await turn.end();
      expect(await jobs.getJobState('run1/lead/1')).toBe('unknown');
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('a worker attached to a turn whose coordinator is resumed attaches to the new one, and its operations go on', async () => {
    const { pool, serving, controller, jobs, coordinatorRedis, queue, logged } = await pair();
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      await turn.call(REQUEST, new AbortController().signal, {}, 'anthropic');
      // The first coordinator's process dies: no farewell, no more heartbeats, nobody reading its
      // messages. Left alive, its reader raced the new one for the worker's "attached" and dropped it.
      gone(pool);
      // A second coordinator takes the run over (a resume): a new incarnation on the same queue.
      const resumed = new WorkerPool(coordinatorRedis.duplicate(), another(coordinatorRedis), jobs, pool.identity, new Signer(SECRET), () => {});
      await resumed.start();
      expect(await coordinatorRedis.get(keysOf(queue).heartbeat)).toBe(resumed.incarnation);
      const again = resumed.open('lead', 1, {}) as RemoteTurn;
      const answer = await again.call(REQUEST, new AbortController().signal, {}, 'anthropic');
      expect(answer.content).toEqual([expect.objectContaining({ text: 'hello' })]);
      // The same job, attached to the new coordinator: not given up as if its coordinator were gone.
      expect(logged.filter((l) => l.includes('given up'))).toEqual([]);
      expect(logged.filter((l) => l.startsWith('took'))).toEqual(['took turn 1 of @lead (run run1)']);
      await again.end();
      await resumed.close();
    } finally {
      controller.abort();
      coordinatorRedis.disconnect();
    }
    await served;
  }, 60_000);

  it("a call on the worker is paced by the coordinator's count of its input tokens, not by its size", async () => {
    // 40 input tokens a minute: two calls the coordinator counts at 5 each go at once; counted by their bytes, each would take it all.
    const { pool, serving, controller } = await pair({ given: { input_tokens: 40 } });
    const served = serving();
    try {
      const turn = pool.open('lead', 1, {}) as RemoteTurn;
      const waits: string[] = [];
      for (let i = 0; i < 2; i++) {
        let answered = false;
        const call = turn.call(REQUEST, new AbortController().signal, { inputTokens: 5, onWait: (reason) => void waits.push(reason) }, 'anthropic');
        void call.then(() => (answered = true));
        await until(() => answered || waits.length > 0, 'the call to go or wait');
        expect(waits).toEqual([]);
        await call;
      }
      await turn.end();
    } finally {
      await pool.close();
      controller.abort();
    }
    await served;
  }, 60_000);

  it('a job not signed with the worker’s secret is said once, however often it is queued again', async () => {
    const { pool, logged, serving, controller, jobs, queue } = await pair({ workerSecret: 'x'.repeat(40), start: false });
    const signer = new Signer(SECRET);
    const served = serving();
    try {
      const job = { run: 'run1', agent: 'lead', turn: 1, version: '1.0.0', workflow: pool.identity.workflow, providers: ['anthropic'], env: {} };
      for (let i = 0; i < 2; i++) {
        await jobs.add('turn', signer.seal(jobPlace(queue, 'run1/lead/1'), job), { jobId: 'run1/lead/1', removeOnFail: true });
        await until(async () => (await jobs.getJobState('run1/lead/1')) === 'unknown', 'the worker to refuse the job');
        // Said the first time it is met, and never again.
        expect(logged.filter((l) => l.includes('not signed'))).toHaveLength(1);
      }
    } finally {
      controller.abort();
      await pool.close();
    }
    expect(await served).toEqual({ code: 'interrupted', turns: 0 });
  }, 60_000);
});

/** A coordinator as its process dies: its timers and its reading stop, with nothing said to Redis. */
function gone(pool: WorkerPool): void {
  const inside = pool as unknown as { closed: boolean; timers: NodeJS.Timeout[]; reader: { disconnect(): void }; stopWatching(): void };
  inside.closed = true;
  for (const timer of inside.timers) clearInterval(timer);
  inside.stopWatching();
  inside.reader.disconnect();
}

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
