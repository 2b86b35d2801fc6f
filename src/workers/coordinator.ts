import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import type { TurnElsewhere, TurnsElsewhere } from '../engine/run-options.js';
import { RemoteTurn, type TurnCarrier } from './remote-turn.js';
import { withinTime } from '../provider/time-limit.js';
import { whenLost } from './redis.js';
import { WorkerFailure, HEARTBEAT_EVERY_MS, HEARTBEAT_MS, jobIdOf, jobPlace, LOCK_MS, keysOf, messageOf, type Down, type TurnJob, type Up } from './wire.js';
import type { Signer } from './signing.js';
import { detached, nothingToDo } from '../detached.js';

/** How long a turn waits for a worker before the coordinator says so, and how often it says it again. */
const FIRST_WAIT_NOTE_MS = 5_000;
const WAIT_NOTE_EVERY_MS = 30_000;
/** How often turns that wait are looked after: a job lost in a race is queued again. */
const LOOK_AFTER_MS = 2_000;
/** How long the Redis may be unreachable before the turns that wait on it fail. */
const LOST_AFTER_MS = 15_000;
/** The longest the end of a run waits for Redis. */
const CLOSE_MS = 5_000;

export interface PoolIdentity {
  run: string;
  version: string;
  workflow: TurnJob['workflow'];
  providers: TurnJob['providers'];
  /** The queue as the user named it, and the Redis URL as they may see it (no password). */
  queue: string;
  shownUrl: string;
}

/**
 * The coordinator's side of --workers (docs/workers.md): each turn that needs a model call or a
 * workspace tool is a BullMQ job; the turn itself (its conversation, the session, the budget, the
 * channel's tools) stays here, and each of its operations is sent to the worker holding the job.
 * When another worker takes the job over (the first died), the operation in flight is sent again,
 * except a tool that may have changed something: its outcome is unknown, as on resume.
 */
export class WorkerPool implements TurnsElsewhere, TurnCarrier {
  readonly incarnation = randomUUID();
  private readonly keys;
  private readonly turns = new Map<string, RemoteTurn>();
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  private lastWaitNote = 0;
  private readonly refusals = new Set<string>();
  private reading: Promise<void> = Promise.resolve();
  private unsigned = false;
  /** Workers said to have stopped, by job and worker. */
  private readonly stopped = new Set<string>();
  lost: Error | undefined;
  private stopWatching = () => {};

  constructor(
    private readonly redis: Redis,
    private readonly reader: Redis,
    private readonly queue: Queue,
    readonly identity: PoolIdentity,
    private readonly signer: Signer,
    private readonly warn: (message: string) => void,
  ) {
    this.keys = keysOf(identity.queue);
  }

  /** Says the run is on (a resume: again, as a new incarnation), then listens to the workers. */
  async start(): Promise<void> {
    await this.redis.del(this.keys.up, this.keys.ended);
    await this.beat();
    // A beat or a look the Redis misses is taken again at the next; a Redis gone for good is said by whenLost.
    this.timers.push(setInterval(() => detached(this.beat(), nothingToDo), HEARTBEAT_EVERY_MS));
    this.timers.push(setInterval(() => detached(this.lookAfterWaiting(), nothingToDo), LOOK_AFTER_MS));
    for (const timer of this.timers) timer.unref();
    this.stopWatching = whenLost(this.redis, LOST_AFTER_MS, (why) => {
      this.lost = new WorkerFailure(`the workers' Redis at ${this.identity.shownUrl} has not answered for ${LOST_AFTER_MS / 1000}s (${why})`);
      for (const turn of this.turns.values()) turn.fail(this.lost);
    });
    this.reading = this.read();
  }

  open(agent: string, turn: number, env: Record<string, string>): TurnElsewhere {
    const { run, version, workflow, providers } = this.identity;
    const job: TurnJob = { run, agent, turn, version, workflow, providers, env };
    const remote = new RemoteTurn(jobIdOf(run, agent, turn), job, this);
    this.turns.set(remote.jobId, remote);
    return remote;
  }

  /** The run is over: waiting jobs are taken back, workers told, connections closed; a Redis that no longer answers holds it 5 s at most. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    this.stopWatching();
    const farewell = async () => {
      for (const turn of [...this.turns.values()]) await turn.end().catch(() => {});
      await this.redis.multi().set(this.keys.ended, this.identity.run, 'EX', 300).del(this.keys.heartbeat).exec();
    };
    await withinTime(farewell(), CLOSE_MS, "the workers' Redis did not answer").catch((e: Error) =>
      this.warn(`${e.message} at the end of the run: workers will find the run gone when its heartbeat expires`),
    );
    this.reader.disconnect();
    // A read held by a Redis that is gone never settles: the loop is left to the process's end.
    await withinTime(this.reading, 1_000, '').catch(() => {});
    await withinTime(this.queue.close(), CLOSE_MS, '').catch(() => {});
    this.redis.disconnect();
  }

  // --- what a RemoteTurn asks of the pool ----------------------------------------------------

  async enqueue(remote: RemoteTurn): Promise<void> {
    await this.queue.add('turn', this.signer.seal(jobPlace(this.identity.queue, remote.jobId), remote.job), {
      jobId: remote.jobId,
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  async dequeue(remote: RemoteTurn): Promise<void> {
    this.turns.delete(remote.jobId);
    if (!remote.queued) return;
    // A job no worker took yet is taken back; one a worker holds is told it is done.
    const job = await this.queue.getJob(remote.jobId);
    if (job && (await job.getState()) !== 'active') await job.remove().catch(() => {});
  }

  async tell(jobId: string, token: string, message: Down): Promise<void> {
    const key = this.keys.down(jobId, token);
    await this.redis
      .multi()
      .rpush(key, this.signer.sealText(key, message))
      .pexpire(key, 24 * 3_600_000)
      .exec();
  }

  // --- listening -----------------------------------------------------------------------------

  private async beat(): Promise<void> {
    await this.redis.set(this.keys.heartbeat, this.incarnation, 'PX', HEARTBEAT_MS);
  }

  private async read(): Promise<void> {
    while (!this.closed) {
      let popped: [string, string] | null;
      try {
        popped = await this.reader.blpop(this.keys.up, 1);
      } catch {
        if (this.closed) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      if (!popped) continue;
      const message = messageOf<Up>(this.signer.openText(this.keys.up, popped[1]));
      if (message) this.heardSafely(message);
      else if (!this.unsigned) {
        this.unsigned = true;
        this.warn(
          `a message on "${this.identity.queue}" at ${this.identity.shownUrl} is not signed with this run's CONCLAVE_WORKERS_SECRET: ignored (a worker with ` +
            `another secret, or a forgery)`,
        );
      }
    }
  }

  /** A listener that throws (a session write on a full disk) fails its turn, never the loop that reads for all turns. */
  private heardSafely(message: Up): void {
    try {
      this.heard(message);
    } catch (e) {
      this.turns.get(message.job)?.fail(e instanceof Error ? e : new WorkerFailure(String(e)));
    }
  }

  private heard(message: Up): void {
    const turn = this.turns.get(message.job);
    switch (message.type) {
      case 'attached':
        if (message.incarnation !== this.incarnation) return;
        // A job whose turn is over here (it ended before a coordinator was restarted): let it go.
        if (!turn) return detached(this.tell(message.job, message.token, { type: 'done' }), nothingToDo); // its job lapses if this is lost
        return turn.attached(message.worker, message.token);
      case 'refused':
        if (!this.refusals.has(`${message.worker} ${message.reason}`)) this.warn(`worker ${message.worker} refused ${message.job}: ${message.reason}`);
        this.refusals.add(`${message.worker} ${message.reason}`);
        return;
      default:
        return turn?.heard(message);
    }
  }

  /**
   * A turn whose worker stopped (killed, its machine gone) is said at once: its lock on the job has
   * lapsed, and the turn waits for a worker to take it over (BullMQ's stalled-job check, which only
   * a living worker runs). Said once per worker and turn.
   */
  private async sayStoppedWorkers(now: number): Promise<void> {
    for (const turn of this.turns.values()) {
      const worker = turn.busyWorker();
      if (!worker || !turn.hasPendingSince(now - LOCK_MS) || this.stopped.has(`${turn.jobId} ${worker}`)) continue;
      if (await this.redis.exists(this.queue.toKey(`${turn.jobId}:lock`))) continue;
      this.stopped.add(`${turn.jobId} ${worker}`);
      const { queue, shownUrl } = this.identity;
      this.warn(
        `worker ${worker} stopped answering for turn ${turn.job.turn} of @${turn.job.agent} (its lock on the job lapsed): the turn goes to the next worker ` +
          `that takes it; if none runs, start one with: conclave worker ${shownUrl} --queue ${queue}`,
      );
    }
  }

  /** Turns whose operation no worker has taken are said; a turn whose job was lost is queued again. */
  private async lookAfterWaiting(): Promise<void> {
    const waiting = [...this.turns.values()].filter((t) => t.waitingSince() !== undefined);
    const longest = Math.min(...waiting.map((t) => t.waitingSince()!));
    const now = Date.now();
    if (waiting.length > 0 && now - longest >= FIRST_WAIT_NOTE_MS && now - this.lastWaitNote >= WAIT_NOTE_EVERY_MS) {
      this.lastWaitNote = now;
      const { queue, shownUrl } = this.identity;
      this.warn(
        `waiting for workers: ${waiting.length} turn${waiting.length === 1 ? '' : 's'} queued on "${queue}" at ${shownUrl}, and no worker has taken ` +
          `${waiting.length === 1 ? 'it' : 'them'} for ${Math.round((now - longest) / 1000)}s; start one with: conclave worker ${shownUrl} --queue ${queue}`,
      );
    }
    await this.sayStoppedWorkers(now);
    for (const turn of this.turns.values()) {
      if (!turn.queued || !turn.hasPendingSince(now - LOOK_AFTER_MS)) continue;
      // Lost: failed by BullMQ (stalled too often), given up by its worker, or taken back in a race.
      if ((await this.queue.getJobState(turn.jobId)) === 'unknown') await this.enqueue(turn);
    }
  }
}
