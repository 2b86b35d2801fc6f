import { type AbortReason, abortReason, Cancelled, RunStopped } from '../abort-reasons.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ModelResponse } from '../provider/client.js';
import type { ToolResult } from '../agents/tools/tool.js';
import { WorkerSetups, type TurnSetup, type WorkerPlace } from './worker-setup.js';
import { another, whenLost } from './redis.js';
import { withinTime } from '../provider/time-limit.js';
import {
  errorToWire,
  HEARTBEAT_MS,
  jobIdOf,
  LOCK_MS,
  jobPlace,
  keysOf,
  messageOf,
  TURN_JOB,
  type Down,
  type Operation,
  type TurnJob,
  type Up,
} from './wire.js';
import type { Signer } from './signing.js';
import { detached, nothingToDo } from '../detached.js';

/** How often a worker's stalled-job check hands a job whose lock lapsed (LOCK_MS, wire.ts) to another worker: seconds, not 30. */
export const STALLED_CHECK_MS = 2_000;

export interface ServeOptions extends WorkerPlace {
  redis: Redis;
  queue: string;
  /** Opens jobs and operations and seals answers with the secret the coordinator shares (signing.ts). */
  signer: Signer;
  concurrency: number;
  /** A worker with no turn for this long exits. */
  idleTimeoutMs: number;
  /** A worker whose Redis has not answered for this long stops (LOST_AFTER_MS unless given). */
  lostAfterMs?: number;
  log(line: string): void;
  /** Hides this machine's secrets in what its tools print, before it leaves the machine. */
  mask(text: string): string;
  /** SIGINT or SIGTERM: turns in hand are left to other workers. */
  signal: AbortSignal;
}

export type Served = { code: 'ended' | 'idle' | 'interrupted' } | { code: 'refused' | 'lost'; reason: string };

/** How long a worker waits for its Redis to come back before it stops. */
const LOST_AFTER_MS = 60_000;

/**
 * `conclave worker` (docs/workers.md): takes turns from the queue, does each operation the
 * coordinator sends (model calls, workspace tools) and sends the result back, until the run ends,
 * it has been idle too long, it is stopped, or it meets a job it must refuse.
 */
export async function serveTurns(options: ServeOptions): Promise<Served & { turns: number }> {
  const { redis, queue, signer } = options;
  const keys = keysOf(queue);
  if (await redis.exists(keys.ended)) return { code: 'ended', turns: 0 };
  let turns = 0;
  const name = `${hostname()}-${process.pid}`;
  const setups = new WorkerSetups(options);
  const say = (message: Up) => redis.rpush(keys.up, signer.sealText(keys.up, message)).then(() => undefined);
  const unsigned = new Set<string>();
  let active = 0;
  let lastActive = Date.now();
  let finish!: (served: Served) => void;
  const finished = new Promise<Served>((resolve) => (finish = resolve));

  /** Turns whose lock this worker lost: BullMQ cancelled them, and says so in an error of its own. */
  const lostLocks = new Set<string>();
  // Three parameters: BullMQ gives the processor a signal, aborted when the job is cancelled (its lock lost).
  const processor = async (job: Job, token: string | undefined, cancelled: AbortSignal | undefined): Promise<void> => {
    active++;
    try {
      const opened = signer.open(jobPlace(queue, job.id!), job.data);
      if (opened === undefined) {
        // Forged by someone who can write the Redis, or queued by a coordinator with another secret: nothing of it runs.
        if (!unsigned.has(job.id!))
          options.log(
            `warning: job ${job.id} is not signed with this worker's CONCLAVE_WORKERS_SECRET: not taken (a coordinator with another secret, or a forgery)`,
          );
        unsigned.add(job.id!);
        throw new UnrecoverableError('not signed');
      }
      const problem = TURN_JOB.problem(opened, 'data');
      if (problem) throw new Error(`job ${job.id} is not a conclave turn: ${problem}`);
      const data = opened as TurnJob;
      if (job.id !== jobIdOf(data.run, data.agent, data.turn)) throw new UnrecoverableError(`job ${job.id} holds the turn of another job`);
      const setup = await setups.setupFor(data);
      if ('refused' in setup) {
        await say({ type: 'refused', job: job.id!, worker: name, reason: setup.refused });
        // Back to the queue for a worker that can take it; this one stops.
        await job.moveToDelayed(Date.now() + 1000, token);
        finish({ code: 'refused', reason: `refused ${job.id}: ${setup.refused}` });
        throw new DelayedError();
      }
      options.log(`took turn ${data.turn} of @${data.agent} (run ${data.run})`);
      turns++;
      await serveJob(job.id!, setup, cancelled);
      if (cancelled?.aborted) {
        options.log(`lost its lock on turn ${data.turn} of @${data.agent}: stopped it; another worker takes it over`);
        throw new DelayedError();
      }
      options.log(`turn ${data.turn} of @${data.agent} is over`);
    } finally {
      active--;
      lastActive = Date.now();
    }
  };

  /** One job: attached to the coordinator's incarnation, doing its operations until it says done. */
  const serveJob = async (jobId: string, setup: TurnSetup, cancelled: AbortSignal | undefined): Promise<void> => {
    const reader = another(redis);
    const inFlight = new Map<string, AbortController>();
    const abortAll = (why: AbortReason) => [...inFlight.values()].forEach((c) => c.abort(why));
    const onStop = () => abortAll(abortReason(options.signal) ?? new RunStopped('the worker stopped'));
    options.signal.addEventListener('abort', onStop);
    // A turn whose lock lapsed is another worker's now: what it runs here stops, and nothing more of it is done.
    const onLapsed = () => abortAll(new Cancelled('another worker: its lock lapsed here'));
    cancelled?.addEventListener('abort', onLapsed, { once: true });
    try {
      let incarnation = await coordinatorOf(redis, keys.heartbeat, options.signal);
      let token = randomUUID();
      await say({ type: 'attached', job: jobId, token, incarnation, worker: name });
      let gone: number | undefined;
      // An operation is done once: a copy pushed again on the list is not done twice.
      const seen = new Set<string>();
      while (!options.signal.aborted) {
        if (cancelled?.aborted) return;
        const popped = await reader.blpop(keys.down(jobId, token), 1);
        if (!popped) {
          const now = await redis.get(keys.heartbeat);
          if (now === incarnation) gone = undefined;
          else if (now === null) {
            gone ??= Date.now();
            if (Date.now() - gone > HEARTBEAT_MS) throw new Error('the coordinator is gone');
          } else {
            // A coordinator resumed the run: what the old one asked is moot; attach to the new one.
            abortAll(new Cancelled('the resumed coordinator'));
            [incarnation, token, gone] = [now, randomUUID(), undefined];
            await say({ type: 'attached', job: jobId, token, incarnation, worker: name });
          }
          continue;
        }
        const message = messageOf<Down>(signer.openText(keys.down(jobId, token), popped[1]));
        if (message?.type === 'done') return;
        if (message?.type === 'abort') inFlight.get(message.id)?.abort(new Cancelled('the coordinator'));
        if (message?.type === 'op' && typeof message.id === 'string' && !seen.has(message.id)) {
          seen.add(message.id);
          const control = new AbortController();
          inFlight.set(message.id, control);
          detached(
            perform(jobId, message.id, message.op, setup, control.signal).finally(() => inFlight.delete(message.id)),
            (e) => options.log(`turn ${jobId}: an operation failed outside its answer: ${e instanceof Error ? e.message : String(e)}`),
          );
        }
      }
      // Stopped: the job is left to lapse, and another worker takes it over.
      await new Promise(() => {});
    } finally {
      abortAll(new Cancelled('the end of its job'));
      options.signal.removeEventListener('abort', onStop);
      cancelled?.removeEventListener('abort', onLapsed);
      reader.disconnect();
    }
  };

  const perform = async (job: string, id: string, op: Operation, setup: TurnSetup, signal: AbortSignal): Promise<void> => {
    let value: ModelResponse | ToolResult;
    try {
      if (op.kind === 'call') {
        value = await setup.provider.call(
          op.request,
          signal,
          {
            ...(op.inputTokens !== undefined ? { inputTokens: op.inputTokens } : {}),
            // Progress words: one the Redis misses leaves the coordinator's view a step behind, nothing more.
            onRetry: (error, waitMs) => detached(say({ type: 'retry', job, id, error, waitMs }), nothingToDo),
            onWait: (reason, waitMs) => detached(say({ type: 'waiting', job, id, reason, waitMs }), nothingToDo),
            onPaced: (waitedMs, reason) => detached(say({ type: 'paced', job, id, waitedMs, reason }), nothingToDo),
            onSent: () => detached(say({ type: 'sent', job, id }), nothingToDo),
          },
          op.provider,
        );
      } else {
        const result = await setup.runTool(op.agent, op.name, op.input, signal);
        value = { ...result, content: options.mask(result.content) };
      }
    } catch (e) {
      if (!signal.aborted) await say({ type: 'failed', job, id, error: errorToWire(e) }).catch(() => {});
      return;
    }
    if (!signal.aborted) await say({ type: 'result', job, id, value }).catch(() => {});
  };

  const worker = new Worker(queue, processor, {
    connection: redis,
    concurrency: options.concurrency,
    lockDuration: LOCK_MS,
    stalledInterval: STALLED_CHECK_MS,
    maxStalledCount: 20,
    drainDelay: 1,
  });
  const errors = new Set<string>();
  worker.on('error', (e) => {
    // A lost lock is said once, by the processor, in a sentence of its own.
    if ([...lostLocks].some((id) => e.message.includes(`job ${id}`))) return;
    if (!errors.has(e.message)) options.log(`warning: ${e.message}`);
    errors.add(e.message);
  });
  // BullMQ could not renew these jobs' locks: another worker may hold them already. Each is cancelled (its signal aborted).
  worker.on('lockRenewalFailed', (jobIds) => {
    for (const id of jobIds) {
      lostLocks.add(id);
      worker.cancelJob(id, 'its lock was lost');
    }
  });
  worker.on('failed', (job, e) => {
    if (!(e instanceof DelayedError) && e.name !== 'DelayedError' && e.message !== 'not signed') options.log(`turn ${job?.id ?? '?'} given up: ${e.message}`);
  });
  const watch = setInterval(() => {
    if (active > 0) return;
    if (Date.now() - lastActive > options.idleTimeoutMs) return finish({ code: 'idle' });
    // A look the Redis misses is taken again in a second; a Redis gone for good is said by whenLost.
    detached(
      redis.exists(keys.ended).then((ended) => ended && active === 0 && finish({ code: 'ended' })),
      nothingToDo,
    );
  }, 1000);
  options.signal.addEventListener('abort', () => finish({ code: 'interrupted' }), { once: true });
  const lostAfterMs = options.lostAfterMs ?? LOST_AFTER_MS;
  const stopWatching = whenLost(redis, lostAfterMs, (why) =>
    finish({ code: 'lost', reason: `the workers' Redis has not answered for ${lostAfterMs / 1000}s (${why}): the turns this worker held go to others` }),
  );
  const served = await finished;
  stopWatching();
  clearInterval(watch);
  // Turns in hand are not finished here: their locks lapse and other workers take them over.
  await withinTime(worker.close(true), 5_000, '').catch(() => {});
  await setups.close();
  return { ...served, turns };
}

/** The incarnation of the coordinator running the queue, waited for while it starts. */
async function coordinatorOf(redis: Redis, heartbeat: string, signal: AbortSignal): Promise<string> {
  const until = Date.now() + HEARTBEAT_MS;
  for (;;) {
    const incarnation = await redis.get(heartbeat);
    if (incarnation) return incarnation;
    if (Date.now() > until || signal.aborted) throw new Error('no coordinator runs this queue');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
