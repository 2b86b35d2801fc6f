import { describe, expect, it } from 'vitest';
import { ChannelError } from '../../src/channel/channel-error.js';
import { checkVote, closedText, openedText, outcome, specify, type ProposalState } from '../../src/channel/proposal.js';

const AGENTS = ['lead', 'a', 'b', 'c'];
const spec = (request: Record<string, unknown>) =>
  specify({ question: 'Ship?', options: ['yes', 'no'], ...request } as never, 'lead', AGENTS, (id) => id === 'taken', 'p1', 3);
const state = (request: Record<string, unknown>, votes: Record<string, string> = {}): ProposalState => ({
  ...spec(request),
  status: 'open',
  votes: new Map(Object.entries(votes).map(([voter, option]) => [voter, { option, reason: '' }])),
  winner: null,
  reason: null,
});

describe('a proposal', () => {
  it('is specified with defaults: every other agent votes, majority, quorum 1, no deadline', () => {
    expect(spec({})).toEqual({
      id: 'p1',
      proposer: 'lead',
      question: 'Ship?',
      options: ['yes', 'no'],
      voters: ['a', 'b', 'c'],
      rule: 'majority',
      quorum: 1,
      deadline_turns: null,
      opened_at_turn: 3,
    });
  });

  it.each([
    [{ question: '  ' }, 'a proposal needs a question'],
    [{ question: 3 }, 'a proposal needs a question'],
    [{ options: ['only'] }, 'a proposal needs at least 2 options'],
    [{ options: 'yes,no' }, 'a proposal needs at least 2 options'],
    [{ options: ['yes', ' '] }, 'every option must be a non-empty string'],
    [{ options: ['yes', 2] }, 'every option must be a non-empty string'],
    [{ options: ['yes', 'yes'] }, 'options must differ from each other'],
    [{ id: 'bad id' }, 'proposal id "bad id" must be letters, digits, _ and -'],
    [{ id: 7 }, 'proposal id 7 must be'],
    [{ id: 'taken' }, 'a proposal with the id "taken" exists already; choose another id'],
    [{ voters: [] }, 'a proposal needs at least one voter'],
    [{ voters: ['zed'] }, 'voter "zed" is not an agent'],
    [{ voters: ['a', 'a'] }, 'each voter may be listed once'],
    [{ rule: 'loudest' }, 'rule must be plurality, majority, unanimous; got "loudest"'],
    [{ quorum: 4 }, 'quorum must be a whole number from 1 to the number of voters (3)'],
    [{ quorum: 0 }, 'quorum must be'],
    [{ quorum: 1.5 }, 'quorum must be'],
    [{ deadline_turns: 0 }, 'deadline_turns must be a whole number of at least 1'],
    [{ deadline_turns: 1.5 }, 'deadline_turns must be'],
  ])('%j is refused: %s', (request, message) => {
    expect(() => spec(request)).toThrow(ChannelError);
    expect(() => spec(request)).toThrow(message);
  });

  it('takes votes only while open, from its voters, for its options', () => {
    const p = state({});
    expect(() => checkVote(p, 'a', 'yes')).not.toThrow();
    expect(() => checkVote(p, 'lead', 'yes')).toThrow('you are not a voter of proposal "p1"; its voters are @a, @b, @c');
    expect(() => checkVote(p, 'a', 'yse')).toThrow('"yse" is not an option of proposal "p1"');
    expect(() => checkVote({ ...p, status: 'no_decision' }, 'a', 'yes')).toThrow('proposal "p1" is closed (no decision); votes are no longer taken');
  });

  it('majority: decided early once more than half of all voters agree; at the end, more than half of the votes cast', () => {
    expect(outcome(state({}, { a: 'yes' }), false)).toBeUndefined();
    expect(outcome(state({}, { a: 'yes', b: 'yes' }), false)).toEqual({ status: 'decided', winner: 'yes' });
    expect(outcome(state({ voters: ['a', 'b'] }, { a: 'yes' }), false)).toBeUndefined();
    expect(outcome(state({ voters: ['a', 'b'] }, { a: 'yes', b: 'no' }), false)).toEqual({
      status: 'no_decision',
      reason: 'no option has more than half of the 2 votes',
    });
    expect(outcome(state({}, { a: 'yes' }), true)).toEqual({ status: 'decided', winner: 'yes' });
    expect(outcome(state({}, {}), true)).toEqual({ status: 'no_decision', reason: 'no votes were cast' });
  });

  it('quorum: no decision below it, a decision at it', () => {
    expect(outcome(state({ quorum: 2 }, { a: 'yes' }), true)).toEqual({ status: 'no_decision', reason: 'the quorum was not reached (1 of 2 votes)' });
    expect(outcome(state({ quorum: 2 }, { a: 'yes', b: 'yes' }), true)).toEqual({ status: 'decided', winner: 'yes' });
    expect(outcome(state({ quorum: 2, rule: 'plurality' }, { a: 'yes' }), false)).toBeUndefined();
  });

  it('plurality: decided early only when the votes left cannot change it; a tie is no decision', () => {
    expect(outcome(state({ rule: 'plurality' }, { a: 'yes', b: 'yes' }), false)).toEqual({ status: 'decided', winner: 'yes' });
    expect(outcome(state({ rule: 'plurality' }, { a: 'yes', b: 'no' }), false)).toBeUndefined();
    expect(outcome(state({ rule: 'plurality', voters: ['a', 'b'] }, { a: 'yes', b: 'no' }), false)).toEqual({
      status: 'no_decision',
      reason: 'a tie between "yes" and "no" (1 each)',
    });
    expect(outcome(state({ rule: 'plurality', options: ['x', 'y', 'z'] }, { a: 'x', b: 'y', c: 'x' }), false)).toEqual({ status: 'decided', winner: 'x' });
  });

  it('unanimous: any disagreement ends it at once; agreement holds only when all have voted', () => {
    expect(outcome(state({ rule: 'unanimous' }, { a: 'yes', b: 'no' }), false)).toEqual({ status: 'no_decision', reason: 'the voters disagree' });
    expect(outcome(state({ rule: 'unanimous' }, { a: 'yes', b: 'yes' }), false)).toBeUndefined();
    expect(outcome(state({ rule: 'unanimous' }, { a: 'yes', b: 'yes', c: 'yes' }), false)).toEqual({ status: 'decided', winner: 'yes' });
    expect(outcome(state({ rule: 'unanimous' }, { a: 'yes', b: 'no' }), true)).toEqual({ status: 'no_decision', reason: 'the voters disagree' });
  });

  it('is announced and closed in words that say its terms and its tally', () => {
    const opened = openedText(spec({ quorum: 2, deadline_turns: 1, voters: ['a', 'b'] }));
    expect(opened).toBe(
      [
        '@lead opened proposal "p1": Ship?',
        'Options: "yes", "no" (rule: majority, 2 voters, quorum: 2 votes, closes after 1 more turn).',
        'Voters: @a, @b. Vote with the vote tool, giving proposal "p1", an option and a reason.',
      ].join('\n'),
    );
    expect(openedText(spec({ voters: ['a'], deadline_turns: 3 }))).toContain('(rule: majority, 1 voter, closes after 3 more turns)');
    const decided = { ...state({}, { a: 'yes', b: 'no', c: 'yes' }), status: 'decided' as const, winner: 'yes' };
    expect(closedText(decided)).toBe('Proposal "p1" is decided: "yes" (votes: "yes" 2, "no" 1; rule: majority).');
    expect(closedText({ ...decided, status: 'no_decision', reason: 'the voters disagree' })).toBe(
      'Proposal "p1" ended with no decision: the voters disagree (votes: "yes" 2, "no" 1; rule: majority).',
    );
    expect(closedText({ ...decided, status: 'cancelled' })).toBe('Proposal "p1" was cancelled by @lead.');
  });
});
