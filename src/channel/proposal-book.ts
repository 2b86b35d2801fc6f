import { ChannelError } from './channel-error.js';
import type { ChannelEvent } from './channel-events.js';
import { isAgentVoter, viewOf, type ProposalState, type ProposalView } from './proposal.js';

type ProposalEvent = Extract<ChannelEvent, { type: 'proposal_opened' | 'vote' | 'proposal_closed' }>;

/** A channel's proposals: their state, changed only by the channel's proposal events. */
export class ProposalBook {
  private readonly proposals = new Map<string, ProposalState>();

  apply(event: ProposalEvent): void {
    switch (event.type) {
      case 'proposal_opened':
        this.proposals.set(event.proposal.id, { ...event.proposal, status: 'open', votes: new Map(), advice: new Map(), winner: null, reason: null });
        return;
      case 'vote': {
        const p = this.require(event.proposal);
        (p.advisers?.includes(event.voter) ? p.advice : p.votes).set(event.voter, { option: event.option, reason: event.reason });
        return;
      }
      case 'proposal_closed': {
        const p = this.require(event.proposal);
        p.status = event.status;
        p.winner = event.winner;
        p.reason = event.reason;
        return;
      }
    }
  }

  /** Open proposals and the agents each still waits on (people vote from GitHub: waitingForPeople). */
  waitingVoters(): { proposal: string; voters: string[] }[] {
    return this.open().map((p) => ({ proposal: p.id, voters: p.voters.filter((v) => isAgentVoter(v) && !p.votes.has(v)) }));
  }

  has(id: string): boolean {
    return this.proposals.has(id);
  }

  /** The proposal, or a ChannelError naming those that are open. */
  require(id: string): ProposalState {
    const p = this.proposals.get(id);
    if (p) return p;
    const open = this.open().map((q) => `"${q.id}"`);
    throw new ChannelError(`there is no proposal "${id}"${open.length ? `; open proposals: ${open.join(', ')}` : '; no proposal is open'}`);
  }

  open(): ProposalState[] {
    return [...this.proposals.values()].filter((p) => p.status === 'open');
  }

  view(id: string): ProposalView | undefined {
    const p = this.proposals.get(id);
    return p && viewOf(p);
  }

  all(): ProposalView[] {
    return [...this.proposals.values()].map(viewOf);
  }

  /** The first free id of the form p1, p2, … */
  nextId(): string {
    let n = this.proposals.size + 1;
    while (this.proposals.has(`p${n}`)) n++;
    return `p${n}`;
  }
}
