import { VOLATILE_FIELDS, type SessionEvent } from '../session/format.js';
import { RAW_LINE } from '../session/reader.js';
import { CallAborted } from '../provider/errors.js';

/** The run no longer produces what the session recorded: the workflow, inputs or environment differ. */
export class DivergenceError extends Error {}

export type EventInput = { type: string } & Record<string, unknown>;

export interface JournalOptions {
  /** Writes an event to the session file. */
  write(event: EventInput): void;
  /** Makes what was written durable. */
  sync(): void;
  /** The line an event would be written as (with secrets masked), to compare it with the recording. */
  lineOf(event: unknown): string;
  /** Called once, when the recording is used up and the run goes on live. */
  onLive?(): void;
}

/**
 * Where a run's events go. A new run writes them. A resumed, forked or replayed run first
 * re-executes what the recording holds: every event it produces must equal the recorded event
 * at the same position, and model responses, tool results and setup outputs are answered from
 * the recording, each released when the run reaches the point where it was recorded. When the
 * recording is used up, the run goes on live.
 */
export class Journal {
  private cursor = 0;
  private broken: Error | undefined;
  private liveFired = false;
  private readonly waiters: { index: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  private readonly responses = new Map<string, number>();
  private readonly toolCalls = new Set<string>();
  private readonly toolResults = new Map<string, number>();
  private readonly setups = new Map<string, number>();
  private releaseScheduled = false;

  constructor(
    private readonly options: JournalOptions,
    private readonly recording: readonly SessionEvent[] = [],
  ) {
    recording.forEach((event, index) => {
      if (event.type === 'model_call') this.responses.set(callKey(event.agent, event.turn, event.step), index);
      else if (event.type === 'tool_call') this.toolCalls.add(String(event.tool_use_id));
      else if (event.type === 'tool_result') this.toolResults.set(String(event.tool_use_id), index);
      else if (event.type === 'setup_finished') this.setups.set(String(event.id), index);
    });
  }

  /** Whether the run produced something other than the recording. */
  get diverged(): boolean {
    return this.broken !== undefined;
  }

  /** Whether the run is still re-executing the recording. */
  get replaying(): boolean {
    return this.cursor < this.recording.length;
  }

  append(event: EventInput): void {
    if (this.broken) throw this.broken;
    if (!this.replaying) {
      this.goLive();
      return this.options.write(event);
    }
    const recorded = this.recording[this.cursor]!;
    if (!sameEvent(recorded, event, this.options.lineOf)) {
      this.broken = new DivergenceError(divergence(recorded, event));
      for (const w of this.waiters.splice(0)) w.reject(this.broken);
      throw this.broken;
    }
    this.cursor++;
    if (!this.replaying) this.goLive();
    this.scheduleRelease();
  }

  sync(): void {
    if (!this.replaying) this.options.sync();
  }

  /** The recorded model response of an agent's turn and step, once the run reaches it; undefined if none was recorded. */
  response(agent: string, turn: number, step: number, signal: AbortSignal): Promise<SessionEvent> | undefined {
    const index = this.responses.get(callKey(agent, turn, step));
    return index === undefined ? undefined : this.at(index, signal).then(() => this.recording[index]!);
  }

  /** Whether a tool call was recorded as started. */
  hasToolCall(toolUseId: string): boolean {
    return this.toolCalls.has(toolUseId);
  }

  /** The recorded result of a tool call, once the run reaches it; undefined if none was recorded. */
  toolResult(toolUseId: string, signal: AbortSignal): Promise<SessionEvent> | undefined {
    const index = this.toolResults.get(toolUseId);
    return index === undefined ? undefined : this.at(index, signal).then(() => this.recording[index]!);
  }

  /** The recorded output of a setup step, once the run reaches it; undefined if none was recorded. */
  setupOutput(id: string, signal: AbortSignal): Promise<SessionEvent> | undefined {
    const index = this.setups.get(id);
    return index === undefined ? undefined : this.at(index, signal).then(() => this.recording[index]!);
  }

  /** Resolves when the recording is used up: anything not recorded happens after that. */
  live(signal: AbortSignal): Promise<void> {
    return this.at(this.recording.length, signal);
  }

  /** The recording is used up: from here on events are written (after `onLive`, such as a `resumed` event). */
  private goLive(): void {
    if (this.liveFired) return;
    this.liveFired = true;
    this.options.onLive?.();
  }

  private at(index: number, signal: AbortSignal): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    if (index < this.cursor) return Promise.reject(new DivergenceError(`the run asked again for recorded event #${this.recording[index]!.seq}`));
    if (!this.replaying) {
      this.goLive();
      return Promise.resolve();
    }
    if (signal.aborted) return Promise.reject(new CallAborted());
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new CallAborted());
      };
      const waiter = {
        index,
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (e: Error) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      this.waiters.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
      this.scheduleRelease();
    });
  }

  /**
   * Releases the waiter the cursor has reached, on a macrotask: in the recorded run its answer came
   * from I/O, so every chain of microtasks running now finished before it, as they must here.
   */
  private scheduleRelease(): void {
    if (this.releaseScheduled) return;
    this.releaseScheduled = true;
    setImmediate(() => {
      this.releaseScheduled = false;
      if (this.broken) return;
      if (!this.replaying) this.goLive();
      for (const waiter of this.waiters.filter((w) => w.index === this.cursor)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  }
}

function callKey(agent: unknown, turn: unknown, step: unknown): string {
  return `${agent}\0${turn}\0${step}`;
}

/** Whether the run produced the recorded event: its line as it would be written equals the line read (volatile fields aside). */
function sameEvent(recorded: SessionEvent, produced: EventInput, lineOf: (event: unknown) => string): boolean {
  const raw = (recorded as SessionEvent & { [RAW_LINE]?: string })[RAW_LINE];
  const volatile = VOLATILE_FIELDS.some((field) => field in recorded || field in produced);
  if (raw !== undefined && !volatile) return lineOf({ seq: recorded.seq, ...produced }) === raw;
  return lineOf(comparable(produced)) === JSON.stringify(comparable(recorded));
}

function comparable(event: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...event };
  delete copy.seq;
  for (const field of VOLATILE_FIELDS) delete copy[field];
  return copy;
}

/** Where the run and the recording part: the first field that differs, with both values. */
function divergence(recorded: SessionEvent, produced: EventInput): string {
  const where = `event #${recorded.seq} (${recorded.type}${recorded.agent ? ` of @${recorded.agent}` : ''})`;
  const diff = firstDifference(comparable(recorded), comparable(produced), '');
  return `the run differs from the session at ${where}: ${diff}`;
}

function firstDifference(a: unknown, b: unknown, path: string): string {
  if (typeof a === 'string' && typeof b === 'string') return stringDifference(a, b, path);
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const key of keys) {
      const x = (a as Record<string, unknown>)[key];
      const y = (b as Record<string, unknown>)[key];
      if (JSON.stringify(x) !== JSON.stringify(y)) return firstDifference(x, y, path ? `${path}.${key}` : key);
    }
  }
  return `${path || 'the event'}: recorded ${short(JSON.stringify(a))}, now ${short(JSON.stringify(b))}`;
}

function stringDifference(a: string, b: string, path: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, a.lastIndexOf('\n', i - 1) + 1, i - 60);
  const window = (s: string) => JSON.stringify(s.slice(from, i + 60));
  return `${path}: recorded …${window(a)}…, now …${window(b)}…`;
}

function short(text: string | undefined): string {
  if (text === undefined) return 'nothing';
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
