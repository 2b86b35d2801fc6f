import { isObject } from '../schema.js';
import type { ProposalSummary } from '../proposal-history.js';
import { completeCall, share, type Grader } from './grader.js';

/** A proposal's votes by agents (advice to people included) and by people. */
function votesOf(p: ProposalSummary): { agents: string[]; people: string[] } {
  // A person's seat is @login or @org/team (an agent's name never starts with @), or one a person cast.
  const person = (seat: string) => seat.startsWith('@') || p.cast_by?.[seat] !== undefined;
  const cast = Object.entries(p.votes);
  return {
    agents: [...cast.filter(([seat]) => !person(seat)), ...Object.entries(p.advice ?? {})].map(([, v]) => v.option),
    people: cast.filter(([seat]) => person(seat)).map(([, v]) => v.option),
  };
}

/** The option most of `options` are, when one has more than any other. */
function plurality(options: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const o of options) counts.set(o, (counts.get(o) ?? 0) + 1);
  const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  return sorted.length && (sorted.length === 1 || sorted[0]![1] > sorted[1]![1]) ? sorted[0]![0] : undefined;
}

const most = (options: readonly string[]) => Math.max(0, ...[...new Set(options)].map((o) => options.filter((x) => x === o).length));

/**
 * How far the agents agreed: per proposal with two agent votes or more, the share of agent votes
 * that chose the option most chose; the value is their mean. Where people voted, `people` is the
 * share of their votes that chose the agents' plurality.
 */
export const voteAgreement: Grader = {
  id: 'vote_agreement',
  means: "the share of agent votes that chose their proposal's most chosen option, averaged over proposals with 2 agent votes or more",
  total: 'mean',
  grade({ summary }) {
    const proposals = summary.proposals.flatMap((p) => {
      const { agents, people } = votesOf(p);
      if (agents.length < 2) return [];
      const majority = plurality(agents);
      const withPeople = people.length && majority !== undefined ? { people: share(people.filter((o) => o === majority).length, people.length) } : {};
      return [{ id: p.id, agents: share(most(agents), agents.length), votes: agents.length, ...withPeople, options: agents }];
    });
    const mean = proposals.length ? proposals.reduce((sum, p) => sum + most(p.options) / p.votes, 0) / proposals.length : null;
    const people = proposals.flatMap((p) => ('people' in p && typeof p.people === 'number' ? [p.people] : []));
    return {
      value: mean === null ? null : Math.round(mean * 10_000) / 10_000,
      proposals: proposals.map(({ options: _options, ...p }) => p),
      ...(proposals.length ? { behind: proposals.map((p) => `${p.id}: ${p.agents} of ${p.votes} agent votes`).join('; ') } : {}),
      ...(people.length ? { people: Math.round((people.reduce((a, b) => a + b, 0) / people.length) * 10_000) / 10_000 } : {}),
    };
  },
};

/**
 * Decisions against the voters: a proposal that closed on another option than a plurality of its
 * votes, and the lead's `complete` giving an output one of a proposal's options other than its
 * outcome (the winner, or the voters' plurality when none won).
 */
export const leadOverride: Grader = {
  id: 'lead_override',
  means: "decisions against the voters' plurality: a proposal closed on another option, or the lead's complete giving an output other than the vote's",
  total: 'sum',
  grade({ events, summary }) {
    const overrides: { proposal: string; voted: string; decided: string; by: string }[] = [];
    for (const p of summary.proposals) {
      const voted = plurality([...votesOf(p).agents, ...votesOf(p).people]);
      if (p.winner && voted && p.winner !== voted) overrides.push({ proposal: p.id, voted, decided: p.winner, by: 'the proposal closed' });
    }
    const complete = completeCall(events);
    const outputs = complete && isObject(complete.input) && isObject(complete.input.outputs) ? complete.input.outputs : {};
    for (const [name, value] of Object.entries(outputs)) {
      for (const p of summary.proposals) {
        const voted = p.winner ?? plurality([...votesOf(p).agents, ...votesOf(p).people]);
        if (typeof value === 'string' && voted && p.options.includes(value) && value !== voted)
          overrides.push({ proposal: p.id, voted, decided: value, by: `@${complete!.agent}'s complete (output ${name})` });
      }
    }
    const behind = overrides.map((o) => `${o.proposal}: voted ${o.voted}, ${o.by} ${o.decided}`).join('; ');
    return { value: overrides.length, overrides, ...(behind ? { behind } : {}) };
  },
};

/** Channel messages of agents per decision: each proposal that closed with a winner, and the lead's complete. */
export const messagesPerDecision: Grader = {
  id: 'messages_per_decision',
  means: "messages the agents posted, per decision (a proposal closed with a winner, the lead's complete)",
  total: 'mean',
  grade({ events, summary }) {
    const messages = summary.messages.filter((m) => m.kind === 'agent').length;
    const decisions = summary.proposals.filter((p) => p.winner).length + (completeCall(events) ? 1 : 0);
    return {
      value: decisions === 0 ? null : Math.round((messages / decisions) * 100) / 100,
      messages,
      decisions,
      behind: `${messages} message${messages === 1 ? '' : 's'}, ${decisions} decision${decisions === 1 ? '' : 's'}`,
    };
  },
};
