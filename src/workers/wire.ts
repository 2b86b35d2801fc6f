import { ConclaveError } from '../conclave-error.js';
import { CallAborted, PromptTooLong, ProviderError } from '../provider/provider-errors.js';
import type { ModelRequest, ModelResponse } from '../provider/client.js';
import { PROVIDERS, type ProviderName } from '../provider/clouds.js';
import { array, integer, object, oneOf, record, string, text, type Infer } from '../session/schema.js';
import type { WaitReason } from '../provider/rates/pacer.js';
import type { ToolResult } from '../agents/tools/tool.js';

/**
 * What crosses Redis between a coordinator and its workers (docs/workers.md): a job per turn, and
 * two kinds of lists. The coordinator reads one list of everything workers say (`up`); a worker
 * attached to a turn reads that attachment's own list (`down`), so an operation sent to a worker
 * that died is never read by the one that takes the job over.
 */

/** What a turn's job holds: who it is, and what a worker checks before it takes it. */
export const TURN_JOB = object({
  run: text(),
  agent: text(),
  turn: integer(),
  /** The coordinator's conclave version: a worker of another version refuses the job. */
  version: text(),
  /** The workflow file, relative to the workspace, and the sha256 of its text. */
  workflow: object({ path: text(), sha256: text() }),
  /** The providers the run's agents use: the worker connects to them (it hides every cloud's credentials from tools, whatever the job says). */
  providers: array(oneOf(...PROVIDERS)),
  /** The workflow's `env:` as the run filled it in: the tools' environment starts from it. */
  env: record(string()),
});
export type TurnJob = Infer<typeof TURN_JOB>;

/** An operation of a turn, done by the worker the turn's job is with. */
export type Operation =
  | { kind: 'call'; request: ModelRequest; provider: ProviderName; inputTokens?: number }
  | { kind: 'tool'; agent: string; name: string; input: unknown };

export type Down = { type: 'op'; id: string; op: Operation } | { type: 'abort'; id: string } | { type: 'done' };

export type Up =
  | { type: 'attached'; job: string; token: string; incarnation: string; worker: string }
  | { type: 'refused'; job: string; worker: string; reason: string }
  | { type: 'result'; job: string; id: string; value: ModelResponse | ToolResult }
  | { type: 'failed'; job: string; id: string; error: WireError }
  | { type: 'retry'; job: string; id: string; error: string; waitMs: number }
  | { type: 'waiting'; job: string; id: string; reason: WaitReason; waitMs: number }
  | { type: 'paced'; job: string; id: string; waitedMs: number; reason: WaitReason }
  | { type: 'sent'; job: string; id: string };

export interface WireError {
  message: string;
  /** A provider's failure keeps its kind and status: they decide the exit code and compaction. */
  provider?: { kind: ProviderError['kind']; status?: number };
  aborted?: boolean;
}

/** The keys of a queue's own data, beside BullMQ's (which are under `bull:QUEUE:`). */
export function keysOf(queue: string) {
  const base = `conclave:${queue}`;
  return {
    /** Everything workers say to the coordinator. */
    up: `${base}:up`,
    /** The coordinator's incarnation, while it lives (it sets it again every few seconds). */
    heartbeat: `${base}:heartbeat`,
    /** Set when the run ends: workers waiting for it exit. */
    ended: `${base}:ended`,
    down: (job: string, token: string) => `${base}:down:${job}:${token}`,
  };
}

/** A queue name as BullMQ takes it (no `:`), and as a person would type it. */
export const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The deterministic id of a turn's job: a turn is queued once, however often it is asked for. */
export function jobIdOf(run: string, agent: string, turn: number): string {
  return `${run}/${agent}/${turn}`;
}

/** How BullMQ sees a worker die: its lock on a job lapses after LOCK_MS without renewal (the coordinator watches for it too). */
export const LOCK_MS = 4_000;

/** How long a coordinator's heartbeat lives; a worker gives a turn up once it is gone this long. */
export const HEARTBEAT_MS = 10_000;
export const HEARTBEAT_EVERY_MS = 2_000;

export function errorToWire(e: unknown, signal?: AbortSignal): WireError {
  if (e instanceof CallAborted || signal?.aborted) return { message: e instanceof Error ? e.message : String(e), aborted: true };
  if (e instanceof ProviderError) return { message: e.message, provider: { kind: e.kind, ...(e.status !== undefined ? { status: e.status } : {}) } };
  return { message: e instanceof Error ? e.message : String(e) };
}

/** A worker's failure that is not the provider's: the turn fails with the worker's sentence. */
export class WorkerFailure extends ConclaveError {}

export function errorFromWire(error: WireError, worker: string): Error {
  if (error.aborted) return new CallAborted();
  if (error.provider) {
    // Its kind decides the exit code, and a prompt too long is compacted and sent again, as a local call's is.
    const failure = new ProviderError(error.message, error.provider.kind, error.provider.status);
    return PromptTooLong.of(failure) ?? failure;
  }
  return new WorkerFailure(`worker ${worker}: ${error.message}`);
}

/** A message opened from Redis (signing.ts), or undefined when it is not one of ours (a hostile or stale list). */
export function messageOf<T extends { type: string }>(value: unknown): T | undefined {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string' ? (value as T) : undefined;
}

/** What a turn's job is sealed for (signing.ts): its queue and id, so a job copied to another id does not open. */
export function jobPlace(queue: string, jobId: string): string {
  return `job ${queue} ${jobId}`;
}
