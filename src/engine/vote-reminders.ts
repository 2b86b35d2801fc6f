import type { Channel, ProposalView } from '../channel/channel.js';

/**
 * When nothing else runs and proposals still wait on voters who took their turn without voting:
 * each such voter (who can still take a turn) is reminded once; after that the proposals close
 * with the votes cast, so that a run cannot hang on them. Returns whether anything changed.
 */
export class VoteReminders {
  private readonly reminded = new Set<string>();

  constructor(private readonly channel: Channel) {}

  settle(canTakeTurn: (agent: string) => boolean, onClosed: (p: ProposalView) => void): boolean {
    const waiting = this.channel.waitingVoters();
    if (waiting.length === 0) return false;
    let reminded = false;
    for (const { proposal, voters } of waiting) {
      const fresh = voters.filter((v) => canTakeTurn(v) && !this.reminded.has(`${proposal}\0${v}`));
      if (fresh.length === 0) continue;
      fresh.forEach((v) => this.reminded.add(`${proposal}\0${v}`));
      const question = this.channel.proposal(proposal)!.question;
      this.channel.postSystem(`Proposal "${proposal}" is still waiting for your vote: ${question} Use the vote tool.`, fresh);
      reminded = true;
    }
    if (!reminded) for (const { proposal } of waiting) onClosed(this.channel.expire(proposal));
    return true;
  }
}
