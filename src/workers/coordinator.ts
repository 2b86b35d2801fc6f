import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import type { ToolUse } from '../agents/turn.js';
import type { ToolResult } from '../agents/tools/tool.js';
import type { CallListeners, ModelRequest, ModelResponse } from '../provider/client.js';
import type { ProviderName } from '../provider/clouds.js';
import { CallAborted } from '../provider/provider-errors.js';
import { outcomeUnknown } from '../engine/tool-calls.js';
import { isModelResponse } from '../session/response-shape.js';
import type { TurnElsewhere, TurnsElsewhere } from '../engine/run-options.js';
import { errorFromWire, WorkerFailure, HEARTBEAT_EVERY_MS, HEARTBEAT_MS, jobIdOf, keysOf, parseMessage, type Down, type Operation, type TurnJob, type Up } from './wire.js';

/** How long a turn waits for a worker before the coordinator says so, and how often it says it again. */
const FIRST_WAIT_NOTE_MS = 5_000;
const WAIT_NOTE_EVERY_MS = 30_000;
/** How often turns that wait are looked after: a job lost in a race is queued again. */
const LOOK_AFTER_MS = 2_000;

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
export class WorkerPool implements TurnsElsewhere {
  readonly incarnation = randomUUID();
  private readonly keys;
  private readonly turns = new Map<string, RemoteTurn>();
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  private lastWaitNote = 0;
  private readonly refusals = new Set<string>();
  private reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: Redis,
    private readonly reader: Redis,
    private readonly queue: Queue,
    readonly identity: PoolIdentity,
    private readonly warn: (message: string) => void,
  ) {
    this.keys = keysOf(identity.queue);
  }

  /** Says the run is on (a resume: again, as a new incarnation), then listens to the workers. */
  async start(): Promise<void> {
    await this.redis.del(this.keys.up, this.keys.ended);
    await this.beat();
    this.timers.push(setInterval(() => void this.beat().catch(() => {}), HEARTBEAT_EVERY_MS));
    this.timers.push(setInterval(() => void this.lookAfterWaiting().catch(() => {}), LOOK_AFTER_MS));
    for (const timer of this.timers) timer.unref();
    this.reading = this.read();
  }

  open(agent: string, turn: number, env: Record<string, string>): TurnElsewhere {
    const { run, version, workflow, providers } = this.identity;
    const job: TurnJob = { run, agent, turn, version, workflow, providers, env };
    const remote = new RemoteTurn(jobIdOf(run, agent, turn), job, this);
    this.turns.set(remote.jobId, remote);
    return remote;
  }

  /** The run is over: waiting jobs are taken back, workers told, connections closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    for (const turn of [...this.turns.values()]) await turn.end().catch(() => {});
    await this.redis.multi().set(this.keys.ended, this.identity.run, 'EX', 300).del(this.keys.heartbeat).exec().catch(() => {});
    this.reader.disconnect();
    await this.reading;
    await this.queue.close().catch(() => {});
    this.redis.disconnect();
  }

  // --- what a RemoteTurn asks of the pool ----------------------------------------------------

  async enqueue(remote: RemoteTurn): Promise<void> {
    await this.queue.add('turn', remote.job, { jobId: remote.jobId, removeOnComplete: true, removeOnFail: true });
  }

  async dequeue(remote: RemoteTurn): Promise<void> {
    this.turns.delete(remote.jobId);
    // A job no worker took yet is taken back; one a worker holds is told it is done.
    const job = await this.queue.getJob(remote.jobId);
    if (job && (await job.getState()) !== 'active') await job.remove().catch(() => {});
  }

  async tell(jobId: string, token: string, message: Down): Promise<void> {
    const key = this.keys.down(jobId, token);
    await this.redis.multi().rpush(key, JSON.stringify(message)).pexpire(key, 24 * 3_600_000).exec();
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
      const message = popped ? parseMessage<Up>(popped[1]) : undefined;
      if (message) this.heard(message);
    }
  }

  private heard(message: Up): void {
    const turn = this.turns.get(message.job);
    switch (message.type) {
      case 'attached':
        if (message.incarnation !== this.incarnation) return;
        // A job whose turn is over here (it ended before a coordinator was restarted): let it go.
        if (!turn) return void this.tell(message.job, message.token, { type: 'done' }).catch(() => {});
        return turn.attached(message.worker, message.token);
      case 'refused':
        if (!this.refusals.has(`${message.worker} ${message.reason}`)) this.warn(`worker ${message.worker} refused ${message.job}: ${message.reason}`);
        this.refusals.add(`${message.worker} ${message.reason}`);
        return;
      default:
        return turn?.heard(message);
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
      this.warn(`waiting for workers: ${waiting.length} turn${waiting.length === 1 ? '' : 's'} queued on "${queue}" at ${shownUrl}, and no worker has taken ${waiting.length === 1 ? 'it' : 'them'} for ${Math.round((now - longest) / 1000)}s; start one with: conclave worker ${shownUrl} --queue ${queue}`);
    }
    for (const turn of this.turns.values()) {
      if (!turn.queued || !turn.hasPendingSince(now - LOOK_AFTER_MS)) continue;
      // Lost: failed by BullMQ (stalled too often), given up by its worker, or taken back in a race.
      if ((await this.queue.getJobState(turn.jobId)) === 'unknown') await this.enqueue(turn);
    }
  }
}

interface Pending {
  op: Operation;
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** The attachment it was sent to, if it was sent. */
  sentTo?: string;
  readOnly?: boolean;
  listeners?: CallListeners;
  since: number;
}

/** One turn whose operations run on a worker: its job is queued with its first operation. */
class RemoteTurn implements TurnElsewhere {
  queued = false;
  private attachment: { worker: string; token: string } | undefined;
  private readonly pending = new Map<string, Pending>();
  private count = 0;
  private ended = false;

  constructor(
    readonly jobId: string,
    readonly job: TurnJob,
    private readonly pool: WorkerPool,
  ) {}

  call = (request: ModelRequest, signal: AbortSignal, listeners: CallListeners, provider: ProviderName): Promise<ModelResponse> =>
    this.send({ kind: 'call', request, provider, ...(listeners.inputTokens !== undefined ? { inputTokens: listeners.inputTokens } : {}) }, signal, { listeners }) as Promise<ModelResponse>;

  tool(use: ToolUse, readOnly: boolean, signal: AbortSignal): Promise<ToolResult> {
    return this.send({ kind: 'tool', agent: this.job.agent, name: use.name, input: use.input }, signal, { readOnly }) as Promise<ToolResult>;
  }

  close(): void {
    void this.end().catch(() => {});
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    for (const p of this.pending.values()) p.reject(new CallAborted());
    this.pending.clear();
    if (!this.queued) return void this.pool.dequeue(this);
    if (this.attachment) await this.pool.tell(this.jobId, this.attachment.token, { type: 'done' });
    await this.pool.dequeue(this);
  }

  hasPendingSince(time: number): boolean {
    return [...this.pending.values()].some((p) => p.since <= time);
  }

  /** When its oldest unsent operation began to wait for a worker, if one waits. */
  waitingSince(): number | undefined {
    if (this.attachment || this.ended) return undefined;
    const since = [...this.pending.values()].map((p) => p.since);
    return since.length ? Math.min(...since) : undefined;
  }

  attached(worker: string, token: string): void {
    if (this.ended || this.attachment?.token === token) return;
    const before = this.attachment;
    this.attachment = { worker, token };
    for (const [id, p] of this.pending) {
      // Sent to a worker that is gone: a tool that may have changed something is not run twice.
      if (p.sentTo && p.sentTo !== token && before && p.op.kind === 'tool' && !p.readOnly) {
        this.pending.delete(id);
        p.resolve(outcomeUnknown(p.op.name, `the worker running it (${before.worker}) stopped`));
      } else if (p.sentTo !== token) {
        this.dispatch(id, p);
      }
    }
  }

  heard(message: Exclude<Up, { type: 'attached' | 'refused' }>): void {
    const p = this.pending.get(message.id);
    if (!p) return;
    switch (message.type) {
      case 'result': {
        this.pending.delete(message.id);
        const problem = answerProblem(p.op, message.value);
        return problem ? p.reject(new WorkerFailure(`worker ${this.attachment?.worker ?? 'unknown'} sent ${problem}`)) : p.resolve(message.value);
      }
      case 'failed':
        this.pending.delete(message.id);
        return p.reject(errorFromWire(message.error, this.attachment?.worker ?? 'unknown'));
      case 'retry':
        return p.listeners?.onRetry?.(message.error, message.waitMs, 0);
      case 'waiting':
        return p.listeners?.onWait?.(message.reason, message.waitMs);
      case 'paced':
        return p.listeners?.onPaced?.(message.waitedMs, message.reason);
    }
  }

  private send(op: Operation, signal: AbortSignal, extra: Pick<Pending, 'readOnly' | 'listeners'>): Promise<unknown> {
    if (signal.aborted || this.ended) return Promise.reject(new CallAborted());
    const id = `${this.pool.incarnation}.${++this.count}`;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const p = this.pending.get(id);
        this.pending.delete(id);
        if (p?.sentTo) void this.pool.tell(this.jobId, p.sentTo, { type: 'abort', id }).catch(() => {});
        reject(new CallAborted());
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const settled = <T>(f: (v: T) => void) => (v: T) => (signal.removeEventListener('abort', onAbort), f(v));
      const p: Pending = { op, resolve: settled(resolve), reject: settled(reject), since: Date.now(), ...extra };
      this.pending.set(id, p);
      if (this.attachment) this.dispatch(id, p);
      else if (!this.queued) {
        this.queued = true;
        this.pool.enqueue(this).catch((e: unknown) => this.failAll(e));
      }
    });
  }

  private dispatch(id: string, p: Pending): void {
    const token = this.attachment!.token;
    p.sentTo = token;
    this.pool.tell(this.jobId, token, { type: 'op', id, op: p.op }).catch((e: unknown) => this.failAll(e));
  }

  private failAll(e: unknown): void {
    for (const p of this.pending.values()) p.reject(new Error(`the workers' Redis failed: ${e instanceof Error ? e.message : String(e)}`));
    this.pending.clear();
  }
}

/** What is wrong with a worker's answer to `op`, or undefined: it is recorded as if made here, so it is checked as a recording is. */
function answerProblem(op: Operation, value: unknown): string | undefined {
  if (op.kind === 'call') return isModelResponse(value) ? undefined : 'an answer that is not a Messages API response';
  const result = value as Partial<ToolResult> | null;
  const fits = typeof result === 'object' && result !== null && typeof result.content === 'string' && (result.isError === undefined || typeof result.isError === 'boolean');
  return fits ? undefined : `a result of ${op.name} that is not a tool result`;
}
