import type { Channel, ProposalView } from '../channel/channel.js';
import type { ChannelEvent } from '../channel/channel-events.js';
import { ballotOf, type Ballot } from '../session/ballot.js';
import type { EventOf } from '../session/format.js';
import type { Journal } from './journal.js';

/** A person's vote as conclave checked it with GitHub (cli/vote-checks.ts): the `human_vote` event's fields. */
export type HumanVote = Omit<EventOf<'human_vote'>, 'type' | 'seq' | 'at_ms'>;

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

  constructor(
    private readonly channel: () => Channel,
    private readonly journal: Journal,
    given: readonly HumanVote[],
    /** The pull request's head commit the ballots are made against, when the run is on one. */
    private readonly head: string | undefined,
    private readonly onClosed: (proposal: ProposalView) => void,
  ) {
    this.given = [...given];
  }

  /** Every channel event passes here: a proposal opened live starts its deadline now. */
  noticed(event: ChannelEvent): void {
    if (event.type === 'proposal_opened' && !this.journal.replaying) this.opened.set(event.proposal.id, Date.now());
  }

  waiting(): PeopleWait[] {
    return this.channel().waitingForPeople();
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
  untilNextDeadline(): number {
    return Math.max(0, Math.min(...this.waiting().map((w) => this.msLeft(w.proposal))));
  }

  /** Votes a resume was given that no proposal took (the run ended before it waited for them). */
  unused(): readonly HumanVote[] {
    return this.given;
  }

  ballots(): { proposal: string; voters: string[]; ballot: Ballot }[] {
    return this.waiting().map((w) => ({ proposal: w.proposal.id, voters: w.seats, ballot: ballotOf(w.proposal, this.head, this.openedAt(w.proposal.id)) }));
  }

  private apply(vote: HumanVote): void {
    const { proposal, seat, voter, option, reason, digest, comment, permission, at } = vote;
    this.journal.append({ type: 'human_vote', proposal, seat, voter, option, reason, digest, comment, permission, at });
    const view = this.channel().vote(seat, proposal, option, reason);
    if (view.status !== 'open') this.onClosed(view);
  }

  private close(proposal: string): void {
    this.onClosed(this.channel().expire(proposal));
  }

  private openedAt(id: string): number | undefined {
    return this.journal.recorded.proposalOpenedAt(id) ?? this.opened.get(id);
  }

  private msLeft(p: ProposalView): number {
    const opened = this.openedAt(p.id) ?? Date.now();
    return opened + (p.deadline_ms ?? 0) - Date.now();
  }
}
