import type { ToolUse } from '../agents/turn.js';
import type { ToolResult } from '../agents/tools/tool.js';
import type { TurnElsewhere } from '../engine/run-options.js';
import { outcomeUnknown } from '../engine/tool-calls.js';
import type { CallListeners, ModelRequest, ModelResponse } from '../provider/client.js';
import type { ProviderName } from '../provider/clouds.js';
import { CallAborted } from '../provider/provider-errors.js';
import { isModelResponse } from '../provider/response-shape.js';
import { errorFromWire, WorkerFailure, type Down, type Operation, type TurnJob, type Up } from './wire.js';
import { detached, nothingToDo } from '../detached.js';

/** What a remote turn needs of the coordinator: its job queued and taken back, and a word to the worker holding it. */
export interface TurnCarrier {
  /** Unique to this coordinator process: an operation's id starts with it, so a resumed run never takes an old answer. */
  readonly incarnation: string;
  /** Why no operation can be sent now (the Redis is gone), or undefined. */
  readonly lost: Error | undefined;
  enqueue(turn: RemoteTurn): Promise<void>;
  dequeue(turn: RemoteTurn): Promise<void>;
  tell(jobId: string, token: string, message: Down): Promise<void>;
}

interface Pending {
  op: Operation;
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** The attachment it was sent to, if it was sent. */
  sentTo?: string;
  readOnly?: boolean;
  /** A model call whose request left the worker it was sent to: made again, it was paid twice. */
  requestLeft?: boolean;
  listeners: CallListeners;
  since: number;
}

/**
 * One turn whose operations run on a worker (docs/workers.md): its job is queued with its first
 * operation, and each operation goes to the worker attached to it. When another worker attaches
 * (the first died), the operation in flight is sent again, but a tool that may have changed
 * something: its outcome is unknown, as on resume.
 */
export class RemoteTurn implements TurnElsewhere {
  queued = false;
  private attachment: { worker: string; token: string } | undefined;
  private readonly pending = new Map<string, Pending>();
  private count = 0;
  private ended = false;

  constructor(
    readonly jobId: string,
    readonly job: TurnJob,
    private readonly pool: TurnCarrier,
  ) {}

  call = (request: ModelRequest, signal: AbortSignal, listeners: CallListeners, provider: ProviderName): Promise<ModelResponse> =>
    this.send({ kind: 'call', request, provider, ...(listeners.inputTokens !== undefined ? { inputTokens: listeners.inputTokens } : {}) }, signal, {
      listeners,
    }) as Promise<ModelResponse>;

  tool(use: ToolUse, readOnly: boolean, signal: AbortSignal): Promise<ToolResult> {
    return this.send({ kind: 'tool', agent: this.job.agent, name: use.name, input: use.input }, signal, { readOnly, listeners: {} }) as Promise<ToolResult>;
  }

  close(): void {
    detached(this.end(), nothingToDo); // a turn closed with its run: its job lapses if the word is lost
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    for (const p of this.pending.values()) p.reject(new CallAborted());
    this.pending.clear();
    if (this.attachment) await this.pool.tell(this.jobId, this.attachment.token, { type: 'done' });
    await this.pool.dequeue(this);
  }

  /** Whether an operation has waited since `time` or before (the first in the map is the oldest). */
  hasPendingSince(time: number): boolean {
    return (this.pending.values().next().value?.since ?? Infinity) <= time;
  }

  /** The worker attached to it, while it has an operation sent to that worker and not answered. */
  busyWorker(): string | undefined {
    return this.attachment && [...this.pending.values()].some((p) => p.sentTo === this.attachment!.token) ? this.attachment.worker : undefined;
  }

  /** When its oldest unsent operation began to wait for a worker, if one waits. */
  waitingSince(): number | undefined {
    return this.attachment ? undefined : this.pending.values().next().value?.since;
  }

  attached(worker: string, token: string): void {
    if (this.ended || this.attachment?.token === token) return;
    const before = this.attachment?.worker;
    this.attachment = { worker, token };
    for (const [id, p] of this.pending) {
      // Sent to a worker that is gone: a tool that may have changed something is not run twice.
      if (p.sentTo && p.op.kind === 'tool' && !p.readOnly) {
        this.pending.delete(id);
        p.resolve(outcomeUnknown(p.op.name, `the worker running it (${before}) stopped`));
      } else {
        if (p.requestLeft) {
          p.requestLeft = false;
          p.listeners.onRepeated?.();
        }
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
        return p.listeners.onRetry?.(message.error, message.waitMs, 0);
      case 'waiting':
        return p.listeners.onWait?.(message.reason, message.waitMs);
      case 'paced':
        return p.listeners.onPaced?.(message.waitedMs, message.reason);
      case 'sent':
        // Only from the worker the operation went to: a stale word of a stopped one changes nothing.
        if (p.sentTo !== this.attachment?.token) return;
        p.requestLeft = true;
        return p.listeners.onSent?.();
    }
  }

  private send(op: Operation, signal: AbortSignal, extra: Pick<Pending, 'readOnly' | 'listeners'>): Promise<unknown> {
    if (signal.aborted || this.ended) return Promise.reject(new CallAborted());
    if (this.pool.lost) return Promise.reject(this.pool.lost);
    const id = `${this.pool.incarnation}.${++this.count}`;
    return new Promise((resolve, reject) => {
      // Settled, it stops listening: a declared agent's signal is the run's, and lives as long.
      const settled = () => signal.removeEventListener('abort', onAbort);
      const p: Pending = { op, since: Date.now(), ...extra, resolve: (v) => (settled(), resolve(v)), reject: (e) => (settled(), reject(e)) };
      const onAbort = () => {
        this.pending.delete(id);
        // A word the worker misses: the operation's answer comes to no one, and the turn goes on without it.
        if (p.sentTo) detached(this.pool.tell(this.jobId, p.sentTo, { type: 'abort', id }), nothingToDo);
        p.reject(new CallAborted());
      };
      signal.addEventListener('abort', onAbort);
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
    this.fail(new WorkerFailure(`the workers' Redis failed: ${e instanceof Error ? e.message : String(e)}`));
  }

  /** Every operation waiting fails with `error`. */
  fail(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }
}

/** What is wrong with a worker's answer to `op`, or undefined: it is recorded as if made here, so it is checked as a recording is. */
function answerProblem(op: Operation, value: unknown): string | undefined {
  if (op.kind === 'call') return isModelResponse(value) ? undefined : 'an answer that is not a Messages API response';
  const result = value as Partial<ToolResult> | null;
  const fits =
    typeof result === 'object' &&
    result !== null &&
    typeof result.content === 'string' &&
    (result.isError === undefined || typeof result.isError === 'boolean');
  return fits ? undefined : `a result of ${op.name} that is not a tool result`;
}
