import type { EventOf } from './format.js';

/** A proposal, its votes and its outcome: what agents, the engine and `show` see of one. */
export interface ProposalSummary {
  id: string;
  proposer: string;
  question: string;
  options: string[];
  rule: string;
  status: string;
  winner: string | null;
  reason: string | null;
  voters: string[];
  tally: Record<string, number>;
  votes: Record<string, { option: string; reason: string }>;
  /** Votes the channel refused (cast after the proposal was decided, or not valid), with why. */
  refused: { voter: string; option: string; why: string }[];
  /** With people among its voters: how long it waits for them (docs/workflow.md: votes from people). */
  deadline_ms?: number;
  /** When it opened (epoch milliseconds), where the session says. */
  opened_at_ms?: number;
  /** The exact tool call it asks consent for (docs/security.md: untrusted content). */
  action?: { tool: string; input: Record<string, unknown> };
  /** A decision that is the people's (people.decide): the agents whose votes are advice, and their votes. */
  advisers?: string[];
  advice?: Record<string, { option: string; reason: string }>;
  /** The people's votes, by seat: who cast each, and the comment it came from. */
  cast_by?: Record<string, { voter: string; url: string | null; permission: string }>;
}

type ProposalEvent = EventOf<'proposal_opened' | 'vote' | 'human_vote' | 'proposal_closed'>;

/** A session's proposals as its events tell them (summary.ts): votes, people's votes, refusals and outcomes. */
export class ProposalHistories {
  private readonly proposals = new Map<string, ProposalSummary>();
  /** The vote tool's calls, by tool use id: a refused one is listed with its proposal. */
  private readonly calls = new Map<string, { voter: string; input: Record<string, unknown> }>();

  apply(e: ProposalEvent): void {
    if (e.type === 'proposal_opened') {
      const p = e.proposal;
      const tally = Object.fromEntries(p.options.map((o) => [o, 0]));
      this.proposals.set(p.id, {
        ...p,
        status: 'open',
        winner: null,
        reason: null,
        tally,
        votes: {},
        refused: [],
        ...(e.at_ms !== undefined ? { opened_at_ms: e.at_ms } : {}),
      });
      return;
    }
    const p = this.proposals.get(e.proposal);
    if (!p) return;
    if (e.type === 'human_vote') p.cast_by = { ...p.cast_by, [e.seat]: { voter: e.voter, url: e.comment?.url ?? null, permission: e.permission } };
    else if (e.type === 'proposal_closed') Object.assign(p, { status: e.status, winner: e.winner, reason: e.reason });
    else if (p.advisers?.includes(e.voter)) p.advice = { ...p.advice, [e.voter]: { option: e.option, reason: e.reason } };
    else {
      p.votes[e.voter] = { option: e.option, reason: e.reason };
      p.tally = Object.fromEntries(p.options.map((o) => [o, Object.values(p.votes).filter((v) => v.option === o).length]));
    }
  }

  voteCalled(voter: string, toolUseId: string, input: Record<string, unknown>): void {
    this.calls.set(toolUseId, { voter, input });
  }

  voteRefused(toolUseId: string, why: string): void {
    const call = this.calls.get(toolUseId);
    const p = call && this.proposals.get(String(call.input.proposal));
    if (call && p) p.refused.push({ voter: call.voter, option: String(call.input.option), why });
  }

  all(): ProposalSummary[] {
    return [...this.proposals.values()];
  }
}
