import { ConclaveError } from '../../conclave-error.js';
import type { EventBody, EventOf, RecordedLimits, SessionEvent } from '../../session/format.js';
import { describeEvent, divergenceAt, divergenceText, ownerOf, sameEvent, type Divergence } from './recorded-events.js';
import { CallAborted } from '../../provider/provider-errors.js';
import { RecordingIndex } from './recording-index.js';

/** The run no longer produces what the session recorded: the workflow, inputs or environment differ. */
export class DivergenceError extends ConclaveError {
  constructor(
    message: string,
    /** The first field that differs, when the run produced an event other than the recorded one. */
    readonly at?: Divergence,
  ) {
    super(message);
  }
}

export type EventInput = EventBody;
/** Events a re-execution does not produce again: a resume's limit changes, notes of what live calls met (rate limits, spend pools), shared texts. */
const NOT_PRODUCED = new Set<SessionEvent['type']>([
  'limits_changed',
  'rate_waited',
  'spend_pools',
  'estimate',
  'call_abandoned',
  'shared_text',
  'batch_creating',
  'batch_submitted',
]);
/** How long re-execution may make no progress before the recording is judged unable to answer. */
const STALL_MS = 1500;

export interface JournalOptions {
  /** Writes an event to the session file. */
  write(event: EventInput): void;
  /** Makes what was written durable. */
  sync(): void;
  /** The line an event would be written as (with secrets masked), to compare it with the recording. */
  lineOf(event: unknown): string;
}

/** What the run is told as the recording is used. */
export interface JournalListener {
  /** Called once, when the recording is used up and the run goes on live. */
  onLive?(): void;
  /** A recorded `limits_changed` event was reached: the run goes on with these limits. */
  onLimits?(limits: RecordedLimits): void;
  /** A recorded `call_abandoned` note was passed: what it paid counts. */
  onAbandoned?(event: EventOf<'call_abandoned'>): void;
  /** The recording cannot answer what the run now waits for (it made no progress for a while). */
  onStall?(error: DivergenceError): void;
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
  private broken: DivergenceError | undefined;
  private liveFired = false;
  private readonly waiters: { index: number; orPast?: boolean; resolve: () => void; reject: (e: Error) => void }[] = [];
  /** What the recording holds, by what asks for it. */
  readonly recorded: RecordingIndex;
  private releaseScheduled = false;
  private watchdog: NodeJS.Timeout | undefined;
  private listener: JournalListener = {};

  constructor(
    private readonly options: JournalOptions,
    private readonly recording: readonly SessionEvent[] = [],
  ) {
    this.recorded = new RecordingIndex(recording);
  }

  /** Keeps a long shared text in the session once (docs/session-format.md: `shared_text`). */
  keepText(sha256: string, text: string): void {
    if (this.recorded.texts.has(sha256)) return;
    this.recorded.texts.add(sha256);
    this.append({ type: 'shared_text', sha256, text });
  }

  listen(listener: JournalListener): void {
    this.listener = listener;
  }

  /** Whether the run produced something other than the recording. */
  get diverged(): boolean {
    return this.broken !== undefined;
  }

  /** Whether the run is still re-executing the recording. */
  get replaying(): boolean {
    return this.cursor < this.recording.length;
  }

  /** The recorded event the run is to produce next, while it re-executes. */
  upcoming(): SessionEvent | undefined {
    return this.replaying && !this.broken ? this.recording[this.cursor] : undefined;
  }

  append(event: EventInput): void {
    if (this.broken) throw this.broken;
    if (!this.replaying) {
      this.goLive();
      return this.options.write(event);
    }
    const recorded = this.recording[this.cursor]!;
    if (!sameEvent(recorded, event, this.options.lineOf)) {
      const at = divergenceAt(recorded, event);
      this.broken = new DivergenceError(divergenceText(recorded, at), at);
      for (const w of this.waiters.splice(0)) w.reject(this.broken);
      throw this.broken;
    }
    this.advance();
  }

  /** Past the event the run just produced, and past the recorded limit changes and notes that follow it. */
  private advance(): void {
    this.cursor++;
    while (this.replaying && NOT_PRODUCED.has(this.recording[this.cursor]!.type)) {
      const event = this.recording[this.cursor]!;
      if (event.type === 'limits_changed') this.listener.onLimits?.(event.limits);
      if (event.type === 'call_abandoned') this.listener.onAbandoned?.(event);
      this.cursor++;
    }
    if (!this.replaying) this.goLive();
    this.scheduleRelease();
  }

  close(): void {
    clearInterval(this.watchdog);
    this.watchdog = undefined;
  }

  sync(): void {
    if (!this.replaying) this.options.sync();
  }

  /** The recorded model response (or refusal as too long) of an agent's turn and call, once the run reaches it; undefined if none was recorded. */
  response(
    agent: string,
    turn: number,
    step: number,
    signal: AbortSignal,
  ): Promise<EventOf<'model_call' | 'context_exceeded' | 'call_failed' | 'call_interrupted'>> | undefined {
    return this.at<'model_call' | 'context_exceeded' | 'call_failed' | 'call_interrupted'>(this.recorded.response(agent, turn, step), signal);
  }

  /**
   * `queue: steer` at a call: its recorded `steered` event (once reached); null when the call was
   * recorded with no messages added to it; undefined when the call is new (decide live).
   */
  steered(agent: string, turn: number, step: number, signal: AbortSignal): Promise<EventOf<'steered'>> | null | undefined {
    const index = this.recorded.steered(agent, turn, step);
    if (index !== undefined) return this.at<'steered'>(index, signal);
    return this.recorded.response(agent, turn, step) !== undefined ? null : undefined;
  }

  /** The recorded result of a tool call, once the run reaches it; undefined if none was recorded. */
  toolResult(agent: string, turn: number, toolUseId: string, signal: AbortSignal): Promise<EventOf<'tool_result'>> | undefined {
    return this.at<'tool_result'>(this.recorded.takeToolResult(agent, turn, toolUseId), signal);
  }

  /** The recorded output of a setup step, once the run reaches it; undefined if none was recorded. */
  setupOutput(id: string, signal: AbortSignal): Promise<EventOf<'setup_finished'>> | undefined {
    return this.at<'setup_finished'>(this.recorded.setupOutput(id), signal);
  }

  /** The recorded tool listing of an MCP server, once the run reaches it; undefined if none was recorded. */
  mcpTools(server: string, signal: AbortSignal): Promise<EventOf<'mcp_tools'>> | undefined {
    return this.at<'mcp_tools'>(this.recorded.mcpTools(server), signal);
  }

  /** The recorded event at `index` once the run reaches it; undefined if none was recorded. */
  private at<T extends SessionEvent['type']>(index: number | undefined, signal: AbortSignal): Promise<EventOf<T>> | undefined {
    return index === undefined ? undefined : this.reach(index, signal).then(() => this.recording[index] as EventOf<T>);
  }

  /**
   * A turn about to start while the run re-executes its recording: it starts when the run reaches
   * the recorded start (undefined when it may start now: not replaying, or the start is next). A slot freed when one agent's turn ended
   * may have been taken later in the recorded run than now, once other agents' answers of the same
   * batch were handled: what the turn is handed depends on when it starts.
   */
  turnStart(agent: string, turn: number, signal: AbortSignal): Promise<void> | undefined {
    if (!this.replaying || this.broken) return undefined;
    const index = this.recorded.turnStart(agent, turn);
    return index === undefined || index <= this.cursor ? undefined : this.reach(index, signal);
  }

  /** Resolves when the recording is used up: anything not recorded happens after that. */
  live(signal: AbortSignal): Promise<void> {
    return this.reach(this.recording.length, signal);
  }

  /** The recording is used up: from here on events are written (after `onLive`, such as a `resumed` event). */
  private goLive(): void {
    if (this.liveFired) return;
    this.liveFired = true;
    this.listener.onLive?.();
  }

  /**
   * After a recorded answer of `agent`'s, when the agent may go on. In the recorded run a live
   * answer was followed by I/O (its cost settled in a spend pool, the cache written) before the
   * agent went on, and other agents' events came in between; re-execution has no such I/O, so the
   * agent waits until the run reaches an event of its own (or one of no agent's), and the events
   * come in the recorded order. Undefined when it may go on at once.
   */
  continueAfter(agent: string, signal: AbortSignal): Promise<void> | undefined {
    if (!this.replaying || this.broken) return undefined;
    let j = this.cursor;
    for (; j < this.recording.length; j++) {
      const event = this.recording[j]!;
      if (NOT_PRODUCED.has(event.type)) continue;
      const owner = ownerOf(event);
      if (owner === undefined || owner === agent) break;
    }
    if (j === this.cursor) return undefined;
    return this.reach(j, signal, true);
  }

  private reach(index: number, signal: AbortSignal, orPast = false): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    if (index < this.cursor) return Promise.reject(new DivergenceError(`the run asked again for recorded ${describeEvent(this.recording[index])}`));
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
      const done = () => signal.removeEventListener('abort', onAbort);
      const waiter = { index, orPast, resolve: () => (done(), resolve()), reject: (e: Error) => (done(), reject(e)) };
      this.waiters.push(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
      this.scheduleRelease();
      this.watch();
    });
  }

  /**
   * While the run waits on the recording, the cursor must move: re-execution does no I/O, so a
   * cursor that stands still means the run waits for something the recording cannot give: it
   * fails at once, naming the event, rather than waiting for the timeout (docs/design.md: limits).
   */
  private watch(): void {
    if (this.watchdog) return;
    let seen = this.cursor;
    this.watchdog = setInterval(() => {
      if (!this.replaying || this.broken) return this.close();
      if (this.cursor !== seen || this.waiters.length === 0) {
        seen = this.cursor;
        return;
      }
      const next = this.recording[this.cursor]!;
      const waits = this.waiters.map((w) => describeEvent(this.recording[w.index])).join(', ');
      this.broken = new DivergenceError(
        `the recording cannot answer the run: it waits for ${waits}, but the run does not produce the recorded ${describeEvent(next)}`,
      );
      for (const w of this.waiters.splice(0)) w.reject(this.broken);
      this.close();
      this.listener.onStall?.(this.broken);
    }, STALL_MS);
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
      // A waiter for an event of its own is released once the run reaches it or goes past it (one of no agent's).
      for (const waiter of this.waiters.filter((w) => w.index === this.cursor || (w.orPast && w.index < this.cursor))) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    });
  }
}
