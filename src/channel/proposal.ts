import type { ProposalSummary } from '../session/summary.js';
import { didYouMean } from '../workflow/suggest.js';
import { ChannelError } from './channel-error.js';
import { isPerson } from '../session/person.js';

export type Rule = 'plurality' | 'majority' | 'unanimous';
export const RULES: readonly Rule[] = ['plurality', 'majority', 'unanimous'];

export type ProposalStatus = 'open' | 'decided' | 'no_decision' | 'cancelled';

/** What `propose` asks for; everything but question and options has a default. */
export interface ProposalRequest {
  question: string;
  options: string[];
  id?: string;
  voters?: string[];
  rule?: Rule;
  quorum?: number;
  deadline_turns?: number;
  action?: ProposalAction;
}

/** The exact tool call a proposal asks consent for (docs/security.md: untrusted content). */
export interface ProposalAction {
  tool: string;
  input: Record<string, unknown>;
}

/** A proposal as it was opened: the fields of the `proposal_opened` event. */
export interface ProposalSpec {
  id: string;
  proposer: string;
  question: string;
  options: string[];
  voters: string[];
  rule: Rule;
  /** Votes needed for any decision (at least 1). */
  quorum: number;
  deadline_turns: number | null;
  /** The channel's count of finished turns when it opened. */
  opened_at_turn: number;
  /** With people among its voters: how long it waits for them, from when it opened (people.deadline). */
  deadline_ms?: number;
  /** The tool call it asks consent for, if it does: decided "allow", the call goes through once. */
  action?: ProposalAction;
  /** Only the people decide it (people.decide): its voters are the people, and these agents' votes are advice. */
  advisers?: string[];
}

/** The workflow's `people:` (docs/workflow.md: votes from people): who may be named, and the defaults of a proposal that names them. */
export interface PeoplePolicy {
  voters: readonly string[];
  rule?: Rule;
  deadlineMs: number;
  /** Proposal ids only the people decide. */
  decide?: readonly string[];
}

export interface Vote {
  option: string;
  reason: string;
}

export interface ProposalState extends ProposalSpec {
  status: ProposalStatus;
  votes: Map<string, Vote>;
  /** The advisers' votes: shown, deciding nothing. */
  advice: Map<string, Vote>;
  winner: string | null;
  /** Why it ended without a decision, or who cancelled it. */
  reason: string | null;
}

export type Outcome = { status: 'decided'; winner: string } | { status: 'no_decision'; reason: string };

const ID = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

/** Checks a `propose` call and fills in its defaults; throws ChannelError with what is wrong. */
export function specify(
  request: ProposalRequest,
  proposer: string,
  agents: readonly string[],
  taken: (id: string) => boolean,
  nextId: string,
  turn: number,
  people?: PeoplePolicy,
): ProposalSpec {
  const fail = (message: string): never => {
    throw new ChannelError(message);
  };
  if (typeof request.question !== 'string' || request.question.trim() === '') fail('a proposal needs a question');
  const options = Array.isArray(request.options) ? request.options : [];
  if (options.length < 2) fail('a proposal needs at least 2 options');
  for (const option of options) {
    if (typeof option !== 'string' || option.trim() === '') fail('every option must be a non-empty string');
  }
  if (new Set(options).size !== options.length) fail('options must differ from each other');
  const id = request.id ?? nextId;
  if (typeof id !== 'string' || !ID.test(id)) fail(`proposal id ${JSON.stringify(id)} must be letters, digits, _ and -`);
  if (taken(id)) fail(`a proposal with the id "${id}" exists already; choose another id`);
  const theirs = people?.decide?.includes(id) === true;
  const named = request.voters ?? (theirs ? [] : agents.filter((a) => a !== proposer));
  if (!Array.isArray(named) || (named.length === 0 && !theirs)) fail('a proposal needs at least one voter');
  const listed = named.map((voter) => (typeof voter === 'string' && isPerson(voter) ? personNamed(voter, people, fail) : voter));
  for (const voter of listed) {
    if (!isPerson(voter) && !agents.includes(voter)) fail(`voter "${voter}" is not an agent${didYouMean(String(voter), agents)}`);
  }
  if (new Set(listed).size !== listed.length) fail('each voter may be listed once');
  // A decision that is the people's (people.decide): they vote, whatever the agent named; the agents it named advise.
  const voters = theirs ? [...people!.voters] : listed;
  const advisers = theirs ? listed.filter((v) => !isPerson(v) && v !== proposer) : [];
  const withPeople = voters.some(isPerson);
  const rule = request.rule ?? (withPeople ? people?.rule : undefined) ?? 'majority';
  if (!RULES.includes(rule)) fail(`rule must be ${RULES.join(', ')}; got ${JSON.stringify(rule)}`);
  const quorum = request.quorum ?? 1;
  if (!Number.isInteger(quorum) || quorum < 1 || quorum > voters.length) {
    fail(`quorum must be a whole number from 1 to the number of voters (${voters.length})`);
  }
  const action = request.action;
  if (action !== undefined && !request.options.includes('allow')) fail('a proposal with an action needs the option "allow" (and another, such as "deny")');
  const deadline = request.deadline_turns ?? null;
  if (deadline !== null && (!Number.isInteger(deadline) || deadline < 1)) fail('deadline_turns must be a whole number of at least 1');
  return {
    id,
    proposer,
    question: request.question,
    options: [...options],
    voters: [...voters],
    rule,
    quorum,
    // The people's decision waits for them until people.deadline: no agent's turn count closes it.
    deadline_turns: theirs ? null : deadline,
    opened_at_turn: turn,
    ...(withPeople ? { deadline_ms: people!.deadlineMs } : {}),
    ...(action !== undefined ? { action: { tool: action.tool, input: action.input } } : {}),
    ...(theirs ? { advisers } : {}),
  };
}

/** Whether `agent` may cancel `p`: its proposer, while it is open, and never the people's decision (people.decide), which their votes or its deadline close. */
export function checkCancel(p: ProposalState, agent: string): void {
  if (agent !== p.proposer) throw new ChannelError(`only @${p.proposer}, who opened proposal "${p.id}", can cancel it`);
  if (p.status !== 'open') throw new ChannelError(`proposal "${p.id}" is closed already (${p.status.replace('_', ' ')})`);
  if (p.advisers) throw new ChannelError(`proposal "${p.id}" is the people's to decide (people.decide): only their votes or its deadline close it`);
}

/** A person named as a voter, as the workflow spells them; only those `people.voters` names: an agent cannot add people. */
function personNamed(voter: string, people: PeoplePolicy | undefined, fail: (message: string) => never): string {
  const known = people?.voters.find((v) => v.toLowerCase() === voter.toLowerCase());
  if (known) return known;
  return fail(
    people
      ? `voter "${voter}" is not among the people this workflow names (people.voters: ${people.voters.join(', ')}); an agent cannot add people`
      : `voter "${voter}" is a person, and this workflow names no people (people.voters); an agent cannot add people`,
  );
}

/** Whether a voter is an agent of the channel (people vote from GitHub, and are told nothing in it). */
export function isAgentVoter(voter: string): boolean {
  return !isPerson(voter);
}

/** Checks a vote; throws ChannelError with what is wrong. */
export function checkVote(p: ProposalState, voter: string, option: string): void {
  if (p.status !== 'open') throw new ChannelError(`proposal "${p.id}" is closed (${p.status.replace('_', ' ')}); votes are no longer taken`);
  if (!p.voters.includes(voter) && !p.advisers?.includes(voter)) {
    throw new ChannelError(`you are not a voter of proposal "${p.id}"; its voters are ${p.voters.map((v) => (isPerson(v) ? v : `@${v}`)).join(', ')}`);
  }
  if (!p.options.includes(option)) {
    throw new ChannelError(
      `"${option}" is not an option of proposal "${p.id}"${didYouMean(option, p.options)}; the options are ` +
        `${p.options.map((o) => JSON.stringify(o)).join(', ')}`,
    );
  }
}

export function tally(p: ProposalState): Record<string, number> {
  const counts = Object.fromEntries(p.options.map((o) => [o, 0]));
  for (const vote of p.votes.values()) counts[vote.option]! += 1;
  return counts;
}

/**
 * The outcome once it is settled, or undefined while it is open. Early, only the votes not yet
 * cast are uncertain: a decision stands as soon as they cannot change it. `final` (every voter
 * has voted, the deadline passed, or no voter can vote any more) applies the rule to the votes cast.
 */
export function outcome(p: ProposalState, final: boolean): Outcome | undefined {
  const cast = p.votes.size;
  const remaining = p.voters.length - cast;
  const ranked = Object.entries(tally(p)).sort((a, b) => b[1] - a[1]);
  const [leader, leaderVotes] = ranked[0]!;
  const secondVotes = ranked[1]![1];
  const voted = ranked.filter(([, n]) => n > 0);

  if (final || remaining === 0) {
    if (cast === 0) return { status: 'no_decision', reason: 'no votes were cast' };
    if (cast < p.quorum) return { status: 'no_decision', reason: `the quorum was not reached (${cast} of ${p.quorum} votes)` };
    switch (p.rule) {
      case 'plurality':
        if (leaderVotes === secondVotes) {
          const tied = ranked.filter(([, n]) => n === leaderVotes).map(([o]) => JSON.stringify(o));
          return { status: 'no_decision', reason: `a tie between ${tied.join(' and ')} (${leaderVotes} each)` };
        }
        return { status: 'decided', winner: leader };
      case 'majority':
        return leaderVotes * 2 > cast
          ? { status: 'decided', winner: leader }
          : { status: 'no_decision', reason: `no option has more than half of the ${cast} votes` };
      case 'unanimous':
        return voted.length === 1 ? { status: 'decided', winner: leader } : { status: 'no_decision', reason: 'the voters disagree' };
    }
  }

  if (cast < p.quorum) return undefined;
  switch (p.rule) {
    case 'plurality':
      return leaderVotes > secondVotes + remaining ? { status: 'decided', winner: leader } : undefined;
    case 'majority':
      return leaderVotes * 2 > p.voters.length ? { status: 'decided', winner: leader } : undefined;
    case 'unanimous':
      return voted.length > 1 ? { status: 'no_decision', reason: 'the voters disagree' } : undefined;
  }
}

export function openedText(p: ProposalSpec): string {
  const terms = [`rule: ${p.rule}`, `${p.voters.length} voter${p.voters.length === 1 ? '' : 's'}`];
  if (p.quorum > 1) terms.push(`quorum: ${p.quorum} votes`);
  if (p.deadline_turns !== null) terms.push(`closes after ${p.deadline_turns} more turn${p.deadline_turns === 1 ? '' : 's'}`);
  const lines = [
    `@${p.proposer} opened proposal "${p.id}": ${p.question}`,
    `Options: ${p.options.map((o) => JSON.stringify(o)).join(', ')} (${terms.join(', ')}).`,
    `Voters: ${p.voters.map((v) => (isPerson(v) ? v : `@${v}`)).join(', ')}. Vote with the vote tool, giving proposal "${p.id}", an option and a reason.`,
  ];
  if (p.advisers)
    lines.push(
      `This decision is the people's (people.decide): only ${p.voters.join(', ')} decide${p.voters.length === 1 ? 's' : ''} it.` +
        (p.advisers.length ? ` ${p.advisers.map((a) => `@${a}`).join(', ')} may vote as advice, shown to them; it decides nothing.` : ''),
    );
  const people = p.voters.filter(isPerson);
  const one = people.length === 1;
  if (people.length > 0)
    lines.push(
      `${people.join(', ')} vote${one ? 's' : ''} from GitHub, not in this channel: the run waits for ${one ? 'that vote' : 'those votes'} ` +
        `when nothing else is left to do (at most ${describeMs(p.deadline_ms ?? 0)} from now), then tells you how the proposal closed.`,
    );
  return lines.join('\n');
}

export function closedText(p: ProposalState): string {
  const counts = Object.entries(tally(p))
    .map(([o, n]) => `${JSON.stringify(o)} ${n}`)
    .join(', ');
  if (p.status === 'cancelled') return `Proposal "${p.id}" was cancelled by @${p.proposer}.`;
  if (p.status === 'decided') return `Proposal "${p.id}" is decided: ${JSON.stringify(p.winner)} (votes: ${counts}; rule: ${p.rule}).`;
  return `Proposal "${p.id}" ended with no decision: ${p.reason} (votes: ${counts}; rule: ${p.rule}).`;
}

/** A proposal as agents, the engine and the session's summary see it (one shape: session/summary.ts). */
export type ProposalView = Omit<ProposalSummary, 'refused' | 'opened_at_ms' | 'cast_by'>;

export function viewOf(p: ProposalState): ProposalView {
  return {
    id: p.id,
    proposer: p.proposer,
    question: p.question,
    options: [...p.options],
    voters: [...p.voters],
    rule: p.rule,
    status: p.status,
    winner: p.winner,
    reason: p.reason,
    tally: tally(p),
    votes: Object.fromEntries(p.votes),
    ...(p.advisers ? { advisers: [...p.advisers], advice: Object.fromEntries(p.advice) } : {}),
    ...(p.deadline_ms !== undefined ? { deadline_ms: p.deadline_ms } : {}),
    ...(p.action !== undefined ? { action: p.action } : {}),
  };
}

/** A deadline as the channel says it: "24 h", "90 min", "30 s". */
function describeMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.ceil(ms / 1000)} s`;
}
