import type { RecordedLimits } from '../../session/format.js';
import { describeDuration, type Limits } from '../../workflow/limits.js';
import { limitEnding, type Ending } from '../ending.js';
import type { Journal } from '../replay/journal.js';
import type { RunOptions } from '../run-options.js';

/**
 * The limits of a run as state (docs/design.md: limits): those it started with, changed where the recording
 * changed them, and, when a resume goes live, raised to the resume's limits with a
 * `limits_changed` event. The timeout's timer runs on wall-clock time, which is not replayed.
 */
export class RunLimits {
  private limits: Limits;
  private timer: NodeJS.Timeout | undefined;

  /** A resume's limits from where its recording ends. */
  private readonly onLive: Limits | undefined;
  private readonly elapsedBeforeMs: number;

  constructor(
    recording: Pick<RunOptions['recording'], 'limits' | 'limitsOnLive' | 'elapsedBeforeMs'>,
    /** Told when the timeout ends the run, and when the limits change (so that waiting calls can be admitted). */
    private readonly on: { timeout(end: Ending): void; change(): void },
  ) {
    this.limits = { ...recording.limits };
    this.onLive = recording.limitsOnLive;
    this.elapsedBeforeMs = recording.elapsedBeforeMs ?? 0;
  }

  get current(): Limits {
    return this.limits;
  }

  /**
   * What is left, at the top of each turn's message. Turns only: spend differs between a paid
   * run and a rerun served from the response cache, and would make every later request miss.
   */
  statusLine(turn: number, teamTurns: number): string {
    return `[Turn ${turn} of at most ${this.limits.maxTurnsPerAgent} for you · team turns: ${teamTurns} of ${this.limits.maxTurns}]`;
  }

  /** Starts the timeout, for the limits the run goes on with. */
  start(): void {
    const { timeoutMs } = this.onLive ?? this.limits;
    clearTimeout(this.timer);
    const left = Math.max(0, timeoutMs - this.elapsedBeforeMs);
    this.timer = setTimeout(() => this.on.timeout(limitEnding('timeout', `(${describeDuration(timeoutMs)})`)), left);
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** A recorded `limits_changed` event was reached. */
  replayed(recorded: RecordedLimits): void {
    this.set(limitsOf(recorded));
  }

  /** The recording is used up: a resume's new limits are recorded and take effect. */
  goLive(journal: Journal): void {
    const next = this.onLive;
    if (!next) return;
    const changed = (Object.keys(next) as (keyof Limits)[]).filter((k) => next[k] !== this.limits[k]);
    if (changed.length === 0) return;
    journal.append({ type: 'limits_changed', limits: recordOf(next), changed });
    this.set(next);
  }

  private set(limits: Limits): void {
    this.limits = { ...limits };
    this.on.change();
  }
}

/** Limits as the session records them (JSON has no Infinity). */
export function recordOf(limits: Limits): RecordedLimits {
  return { ...limits, maxTokensTotal: Number.isFinite(limits.maxTokensTotal) ? limits.maxTokensTotal : null };
}

export function limitsOf(recorded: RecordedLimits): Limits {
  return { ...recorded, maxTokensTotal: recorded.maxTokensTotal ?? Infinity };
}
