import { RunStopped } from '../abort-reasons.js';
import { detached } from '../detached.js';
import { ending, endingOfError, type Ending } from './ending.js';
import type { PeopleVotes } from './people-votes.js';
import type { Journal } from './replay/journal.js';
import type { Team } from './teams/team.js';
import type { TurnCounts } from './turn-counts.js';
import { takeTurn, type TurnEnd, type TurnHost } from './turn-runner.js';

/** What the scheduler is given by its run (run.ts): the team once set up, what a turn needs, and the run's ceilings and people. */
export interface SchedulerParts {
  controller: AbortController;
  journal: Journal;
  turns: TurnCounts;
  people: PeopleVotes;
  concurrency: () => number;
  team: () => Team;
  turnHost: () => TurnHost;
  /** With nobody to wait for in process (--park, a replay), a vote parks the run. */
  parksForPeople: boolean;
  /** After each turn: the turns left may all wait for batches (--park). */
  afterTurn: () => void;
}

/**
 * The scheduler (docs/design.md: turns, ending): turns for agents with unread messages, up to
 * `concurrency` at once, with managers' fan-in; and the end of the run, noticed the moment nothing
 * is left to do. Every decision is made when something changes, never on a timer. It owns the
 * run's ending: the first `stop` decides it, aborts what runs, and `done` settles once no turn runs.
 */
export class Scheduler {
  readonly running = new Set<string>();
  /** Running turns whose call waits for a message batch: they hold no concurrency slot. */
  private readonly batchWaiting = new Set<string>();
  ending: Ending | undefined;
  private settled!: () => void;
  readonly done = new Promise<void>((resolve) => (this.settled = resolve));

  constructor(private readonly parts: SchedulerParts) {}

  /** Starts every turn that may start now; when none runs and none may start, decides how the run ends. */
  pump(): void {
    if (this.ending) return this.settle();
    this.startEligible(false);
    if (this.running.size > 0) return;
    // Nothing runs, yet managers may wait on each other's fan-in: let them go rather than stall.
    this.startEligible(true);
    if (this.running.size > 0) return;
    this.nothingRuns();
  }

  /** A running turn's call goes to a batch, or comes back from one: while it waits, its slot is free. */
  batchWait(agent: string, waiting: boolean): void {
    if (!waiting) return void this.batchWaiting.delete(agent);
    this.batchWaiting.add(agent);
    // Another turn may start, and its call join the same batch.
    if (!this.ending) this.startEligible(false);
  }

  startEligible(ignoreFanIn: boolean): void {
    const { channel, fanIn } = this.parts.team();
    const { turns } = this.parts;
    for (const name of channel.withUnread()) {
      if (this.running.size - this.batchWaiting.size >= this.parts.concurrency() || turns.teamCapped) return;
      if (this.running.has(name) || !turns.hasTurnsLeft(name)) continue;
      if (!ignoreFanIn && fanIn.waits(name)) continue;
      this.startTurn(name);
    }
  }

  private nothingRuns(): void {
    const { channel, spawner, reminders } = this.parts.team();
    const { turns, people } = this.parts;
    const wanting = channel.withUnread().filter((n) => !spawner.isEnded(n));
    if (wanting.length > 0) {
      const end = turns.outOfTurns(wanting);
      return end ? this.stop(end) : this.pump();
    }
    if (reminders.some((r) => r.settle((agent) => turns.canTakeTurn(agent)))) return this.pump();
    if (people.settle()) return this.pump();
    // Only people's votes can move the run on: it parks, or waits in process.
    if (people.waiting().length > 0)
      return this.parts.parksForPeople ? this.stop(...people.parkedStop()) : people.waitInProcess(() => this.step(() => this.pump()));
    this.stop(ending('idle', 'ended idle: no agent has anything left to do'));
  }

  private startTurn(name: string): void {
    const { turns, journal, controller } = this.parts;
    this.running.add(name);
    const turn = turns.of(name) + 1;
    const begin = (): Promise<TurnEnd> => {
      turns.begin(name, turn);
      return takeTurn(this.parts.turnHost(), name, turn);
    };
    // Re-executing a recording, a turn the recorded run started later than now starts there (journal.ts).
    const later = journal.turnStart(name, turn, controller.signal);
    // A turn never throws (a recorded start the run never reaches is given up with it): the run
    // ends once every turn's end is applied (settle waits for `running` to empty).
    detached(
      (later !== undefined ? later.then(begin, (): TurnEnd => ({})) : begin()).then((end) => this.step(() => this.apply(name, end))),
      this.fail,
    );
  }

  /** How a turn ended, applied: the one place a turn's outcome changes the run. */
  private apply(name: string, end: TurnEnd): void {
    if (end.stop) this.stop(end.stop);
    this.running.delete(name);
    this.pump();
    this.parts.afterTurn();
  }

  /** The one way into the run from outside a turn: a throw (a recording that differs, a full disk) stops it with its reason (ARCHITECTURE.md). */
  step(what: () => void): void {
    try {
      what();
    } catch (e) {
      this.fail(e);
    }
  }

  /** A throw, or a rejection handed over with detached(): the run stops with its reason. */
  readonly fail = (e: unknown): void => this.stop(endingOfError(e) ?? ending('error', e instanceof Error ? e.message : String(e)));

  stop(end: Ending, why: RunStopped = new RunStopped(end.reason)): void {
    if (this.ending) return;
    this.ending = end;
    this.parts.controller.abort(why);
    this.settle();
  }

  settle(): void {
    if (this.ending && this.running.size === 0) this.settled();
  }
}
