import { createHash } from 'node:crypto';
import { isPerson } from './person.js';

/** What a ballot is made from: a proposal as the session or the channel has it. */
export interface BallotSource {
  id: string;
  proposer: string;
  question: string;
  options: string[];
  voters: string[];
  rule: string;
  status: string;
  votes: Record<string, { option: string; reason: string }>;
  /** A decision that is the people's (people.decide): the agents' votes, as advice. */
  advice?: Record<string, { option: string; reason: string }>;
  deadline_ms?: number;
  action?: { tool: string; input: Record<string, unknown> };
}

/**
 * A proposal as people are shown it, to vote on from GitHub (docs/github-action.md: votes from
 * people): the question, the options, the votes so far, the seats still waited for, and for each
 * option the exact command that votes for it, ending in the ballot's digest.
 */
export interface Ballot {
  proposal: string;
  question: string;
  options: string[];
  proposer: string;
  rule: string;
  /** The people seats still waited for. */
  waiting_for: string[];
  votes: Record<string, { option: string; reason: string }>;
  /** The agents' votes on a decision that is the people's: advice, deciding nothing. */
  advice?: Record<string, { option: string; reason: string }>;
  digest: string;
  commands: Record<string, string>;
  /** When it closes by its rule with the votes cast (ISO 8601), when the opening time is known. */
  deadline?: string;
  /** The exact tool call it asks consent for, when it does. */
  action?: { tool: string; input: Record<string, unknown> };
}

/** What a ballot is bound to besides its proposal: the run it is a ballot of, and the pull request's head it reviewed. */
export interface BallotBinding {
  run: string;
  head: string | undefined;
}

/**
 * The first 12 hex characters of a sha256 of the proposal as shown (id, question, options in
 * order, voters, rule), the run and the pull request's head commit when the run is on one: a vote
 * carries it, so a vote counts only for exactly what was shown, in the run that showed it (a
 * changed proposal, another run's ballot, or a moved head makes it stale).
 */
export function ballotDigest(p: Pick<BallotSource, 'id' | 'question' | 'options' | 'voters' | 'rule' | 'action'>, bound: BallotBinding): string {
  // A proposal that asks consent for a tool call binds the vote to that call too.
  const shown = JSON.stringify([p.id, p.question, p.options, p.voters, p.rule, bound.head ?? null, bound.run, ...(p.action ? [p.action] : [])]);
  return createHash('sha256').update(shown).digest('hex').slice(0, 12);
}

/** The seats of an open proposal that are people who have not voted. */
export function peopleSeatsOpen(p: Pick<BallotSource, 'status' | 'voters' | 'votes'>): string[] {
  return p.status === 'open' ? p.voters.filter((v) => isPerson(v) && !Object.hasOwn(p.votes, v)) : [];
}

export function ballotOf(p: BallotSource, bound: BallotBinding, openedAtMs?: number): Ballot {
  const digest = ballotDigest(p, bound);
  return {
    proposal: p.id,
    question: p.question,
    options: [...p.options],
    proposer: p.proposer,
    rule: p.rule,
    waiting_for: peopleSeatsOpen(p),
    votes: { ...p.votes },
    ...(p.advice && Object.keys(p.advice).length ? { advice: { ...p.advice } } : {}),
    digest,
    commands: Object.fromEntries(p.options.map((o) => [o, voteCommand(p.id, o, digest)])),
    ...(openedAtMs !== undefined && p.deadline_ms !== undefined ? { deadline: new Date(openedAtMs + p.deadline_ms).toISOString() } : {}),
    ...(p.action ? { action: p.action } : {}),
  };
}

/** An option as a word of the command: bare when it is one plain word, else a JSON string. */
const BARE = /^[^\s"\\]+$/;

export function voteCommand(proposal: string, option: string, digest: string): string {
  return `/conclave vote ${proposal} ${BARE.test(option) ? option : JSON.stringify(option)} ${digest}`;
}

export interface VoteCommand {
  proposal: string;
  option: string;
  digest: string;
  /** The text after the digest, trimmed. */
  reason: string;
}

// As the ballot writes it: one space between the words; what follows the digest, after white space, is the reason.
const COMMAND = /^\/conclave vote ([A-Za-z0-9][A-Za-z0-9_-]{0,127}) ([^\s"\\]+|"(?:[^"\\\r\n]|\\.)*") ([0-9a-f]{12})(?:[ \t\r\n]+([\s\S]*))?$/;

/**
 * A comment's text as a vote, when all of it (leading and trailing white space aside) is one
 * `/conclave vote PROPOSAL OPTION DIGEST [reason…]`; undefined otherwise. Nothing else in a
 * comment counts: text before the command, a look-alike character or a stray quote makes it data.
 */
export function parseVoteCommand(body: string): VoteCommand | undefined {
  const match = COMMAND.exec(body.trim());
  if (!match) return undefined;
  let option = match[2]!;
  if (option.startsWith('"')) {
    try {
      option = JSON.parse(option) as string;
    } catch {
      return undefined;
    }
  }
  return { proposal: match[1]!, option, digest: match[3]!, reason: (match[4] ?? '').trim() };
}

/** The ballots of a session's proposals that wait for people, bound to its run and the head it records. */
export function ballotsOf(proposals: readonly (BallotSource & { opened_at_ms?: number })[], bound: BallotBinding): Ballot[] {
  return proposals.filter((p) => peopleSeatsOpen(p).length > 0).map((p) => ballotOf(p, bound, p.opened_at_ms));
}
