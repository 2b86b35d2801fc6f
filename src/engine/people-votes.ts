import type { Channel, ProposalView } from '../channel/channel.js';
import type { ChannelEvent } from '../channel/channel-events.js';
import { ballotOf, peopleSeatsOpen, type Ballot, type BallotBinding } from '../session/ballot.js';
import type { HumanVote } from '../session/format.js';
import type { Journal } from './replay/journal.js';
import { Parked } from '../abort-reasons.js';
import { ending, type Ending } from './ending.js';
import type { RunProgress } from './run-progress.js';

export type { HumanVote } from '../session/format.js';

/** A proposal the run waits on for people's votes, and the seats still open. */
export interface PeopleWait {
  proposal: ProposalView;
  seats: string[];
}

/**
 * Votes from people (docs/workflow.md: votes from people). People vote from GitHub, never in the
 * channel, so the run takes their votes only when nothing else runs: a vote a resume was given,
 * or, while it re-executes, the vote its recording holds at that point. A proposal past its
 * deadline closes by its rule with the votes cast. What is left waits: the run parks or waits.
 */
export class PeopleVotes {
  /** When proposals of this process opened, for their deadlines (a recorded one's time is in the recording). */
  private readonly opened = new Map<string, number>();
  private readonly given: HumanVote[];

  /** Waiting in process: the next deadline's timer, and the wait last told. */
  private timer: NodeJS.Timeout | undefined;
  private told = '';

  constructor(
    private readonly channel: () => Channel,
    private readonly journal: Journal,
    options: { votes: readonly HumanVote[]; head?: string; run: string } | undefined,
    private readonly progress: RunProgress,
    signal: AbortSignal,
  ) {
    this.given = [...(options?.votes ?? [])];
    this.bound = { run: options?.run ?? '', head: options?.head };
    signal.addEventListener('abort', () => clearTimeout(this.timer), { once: true });
  }

  /** The run the ballots are of, and the pull request's head commit they are made against, when the run is on one. */
  private readonly bound: BallotBinding;

  /** Every channel event passes here: a proposal opened live starts its deadline now. */
  noticed(event: ChannelEvent): void {
    if (event.type === 'proposal_opened' && !this.journal.replaying) this.opened.set(event.proposal.id, Date.now());
  }

  /** Open proposals whose people seats have not all voted, with those seats. */
  waiting(): PeopleWait[] {
    return this.channel()
      .allProposals()
      .map((proposal) => ({ proposal, seats: peopleSeatsOpen(proposal) }))
      .filter((w) => w.seats.length > 0);
  }

  /** Nothing else runs: applies a vote or closes a proposal past its deadline. Returns whether anything changed. */
  settle(): boolean {
    const waiting = this.waiting();
    if (waiting.length === 0) return false;
    const next = this.journal.upcoming();
    if (next) {
      // Re-executing: the recording says what happened here.
      if (next.type === 'human_vote') return (this.apply(next), true);
      if (next.type === 'proposal_closed' && waiting.some((w) => w.proposal.id === next.proposal)) return (this.close(next.proposal), true);
      return false;
    }
    const vote = this.given.find((v) => waiting.some((w) => w.proposal.id === v.proposal && w.seats.includes(v.seat)));
    if (vote) {
      this.given.splice(this.given.indexOf(vote), 1);
      this.apply(vote);
      return true;
    }
    const past = waiting.filter((w) => this.msLeft(w.proposal) <= 0);
    for (const w of past) this.close(w.proposal.id);
    return past.length > 0;
  }

  /** How long until the first deadline of those waiting passes. */
  private untilNextDeadline(): number {
    return Math.max(0, Math.min(...this.waiting().map((w) => this.msLeft(w.proposal))));
  }

  /**
   * Without --park: the run waits in process until the next deadline (when `pump` runs again and
   * closes what passed it), saying once for whom it waits. A signal or a limit clears the wait.
   */
  waitInProcess(pump: () => void): void {
    const waits = this.waiting().map((w) => ({ proposal: w.proposal.id, seats: w.seats }));
    const told = JSON.stringify(waits);
    if (told !== this.told) this.progress.tell({ type: 'people', waits });
    this.told = told;
    clearTimeout(this.timer);
    this.timer = setTimeout(pump, Math.min(this.untilNextDeadline() + 5, 2 ** 31 - 1));
  }

  /** --park: the run stops as `waiting`, its reason naming whom it waits for and on what. */
  parkedStop(): [Ending, Parked] {
    const wanted = this.waiting()
      .map((w) => `a vote from ${w.seats.join(', ')} on proposal "${w.proposal.id}"`)
      .join('; ');
    const end = ending('waiting', `parked: waiting for ${wanted}`);
    return [end, new Parked(end.reason)];
  }

  /** The run ends: a vote a resume was given that no proposal took (the run ended before it waited for it) is said. */
  warnUnused(): void {
    for (const v of this.given)
      this.progress.tell({ type: 'warning', message: `the vote of @${v.voter} on ${v.proposal} was not recorded: the run ended before it waited for it` });
  }

  /** A run parked for people: each proposal it waits on, the seats, and the ballot (the result's `waitingFor`). */
  ballotsIfWaiting(): { waitingFor?: { proposal: string; voters: string[]; ballot: Ballot }[] } {
    const waiting = this.waiting();
    if (waiting.length === 0) return {};
    return {
      waitingFor: waiting.map((w) => ({ proposal: w.proposal.id, voters: w.seats, ballot: ballotOf(w.proposal, this.bound, this.openedAt(w.proposal.id)) })),
    };
  }

  private apply(vote: HumanVote): void {
    const { proposal, seat, voter, option, reason, digest, comment, permission, at } = vote;
    this.journal.append({ type: 'human_vote', proposal, seat, voter, option, reason, digest, comment, permission, at });
    const view = this.channel().vote(seat, proposal, option, reason);
    if (view.status !== 'open') this.progress.proposal(view);
  }

  private close(proposal: string): void {
    this.progress.proposal(this.channel().expire(proposal));
  }

  private openedAt(id: string): number | undefined {
    return this.journal.recorded.proposalOpenedAt(id) ?? this.opened.get(id);
  }

  private msLeft(p: ProposalView): number {
    const opened = this.openedAt(p.id) ?? Date.now();
    return opened + (p.deadline_ms ?? 0) - Date.now();
  }
}
