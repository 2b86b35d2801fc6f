import { describe, expect, it } from 'vitest';
import { Channel } from '../../src/channel/channel.js';
import { ChannelError } from '../../src/channel/channel-error.js';
import type { ProposalRequest } from '../../src/channel/proposal.js';
import { team } from './team.js';

const VOTERS = ['a', 'b', 'c'];

function open(request: Partial<ProposalRequest> = {}) {
  const channel = new Channel(team());
  channel.propose('lead', { id: 'q', question: 'Which?', options: ['x', 'y', 'z'], voters: VOTERS, ...request });
  return channel;
}

const status = (channel: Channel) => {
  const p = channel.proposal('q')!;
  return { status: p.status, winner: p.winner, reason: p.reason };
};

describe('opening a proposal', () => {
  it('wakes the voters with the question, and defaults to every agent but the proposer', () => {
    const channel = new Channel(team());
    const p = channel.propose('lead', { question: 'Approve the PR?', options: ['approve', 'reject'] });
    expect(p).toMatchObject({ id: 'p1', voters: ['a', 'b', 'c', 'sub', 'd'], rule: 'majority', status: 'open' });
    const notice = channel.message(1)!;
    expect(notice.kind).toBe('system');
    expect(notice.recipients).toEqual(['a', 'b', 'c', 'sub', 'd']);
    expect(notice.text).toContain('@lead opened proposal "p1": Approve the PR?');
    expect(notice.text).toContain('Options: "approve", "reject" (rule: majority, 5 voters).');
  });

  it.each<[Partial<ProposalRequest>, string]>([
    [{ question: '' }, 'a proposal needs a question'],
    [{ options: ['only'] }, 'a proposal needs at least 2 options'],
    [{ options: ['same', 'same'] }, 'options must differ from each other'],
    [{ options: ['ok', ''] }, 'every option must be a non-empty string'],
    [{ voters: ['a', 'ghost'] }, 'voter "ghost" is not an agent'],
    [{ voters: [] }, 'a proposal needs at least one voter'],
    [{ voters: ['a', 'a'] }, 'each voter may be listed once'],
    [{ rule: 'consensus' as never }, 'rule must be plurality, majority, unanimous; got "consensus"'],
    [{ quorum: 4 }, 'quorum must be a whole number from 1 to the number of voters (3)'],
    [{ quorum: 0 }, 'quorum must be a whole number from 1 to the number of voters (3)'],
    [{ deadline_turns: 0 }, 'deadline_turns must be a whole number of at least 1'],
    [{ id: 'has space' }, 'proposal id "has space" must be letters, digits, _ and -'],
  ])('rejects %j', (request, message) => {
    const channel = new Channel(team());
    expect(() => channel.propose('lead', { id: 'q', question: 'Which?', options: ['x', 'y'], voters: VOTERS, ...request })).toThrow(new ChannelError(message));
  });

  it('rejects a second proposal with the same id', () => {
    const channel = open();
    expect(() => channel.propose('a', { id: 'q', question: 'Again?', options: ['x', 'y'] })).toThrow('a proposal with the id "q" exists already');
  });
});

describe('voting', () => {
  it('lets a voter change its vote until resolution', () => {
    const channel = open({ rule: 'unanimous' });
    channel.vote('a', 'q', 'x');
    channel.vote('a', 'q', 'y', 'changed my mind');
    expect(channel.proposal('q')!.votes).toEqual({ a: { option: 'y', reason: 'changed my mind' } });
    expect(channel.proposal('q')!.tally).toEqual({ x: 0, y: 1, z: 0 });
  });

  it.each<[string, (c: Channel) => unknown, string]>([
    ['an unknown proposal', (c) => c.vote('a', 'nope', 'x'), 'there is no proposal "nope"; open proposals: "q"'],
    ['an unknown option', (c) => c.vote('a', 'q', 'xx'), '"xx" is not an option of proposal "q" (did you mean "x"?); the options are "x", "y", "z"'],
    ['a non-voter', (c) => c.vote('d', 'q', 'x'), 'you are not a voter of proposal "q"; its voters are @a, @b, @c'],
    ['the proposer who is no voter', (c) => c.vote('lead', 'q', 'x'), 'you are not a voter of proposal "q"; its voters are @a, @b, @c'],
  ])('rejects a vote from %s', (_, act, message) => {
    expect(() => act(open())).toThrow(new ChannelError(message));
  });

  it('rejects a vote after resolution', () => {
    const channel = open();
    channel.vote('a', 'q', 'x');
    channel.vote('b', 'q', 'x');
    expect(() => channel.vote('c', 'q', 'y')).toThrow('proposal "q" is closed (decided); votes are no longer taken');
  });
});

describe('rules', () => {
  it('majority: decided early once an option has more than half of the voters', () => {
    const channel = open();
    channel.vote('a', 'q', 'x');
    expect(status(channel).status).toBe('open');
    channel.vote('b', 'q', 'x');
    expect(status(channel)).toEqual({ status: 'decided', winner: 'x', reason: null });
  });

  it('majority: no decision when all voted and no option has more than half', () => {
    const channel = open();
    channel.vote('a', 'q', 'x');
    channel.vote('b', 'q', 'y');
    channel.vote('c', 'q', 'z');
    expect(status(channel)).toEqual({ status: 'no_decision', winner: null, reason: 'no option has more than half of the 3 votes' });
  });

  it('plurality: decided early when the remaining votes cannot catch the leader', () => {
    const channel = open({ rule: 'plurality', voters: ['a', 'b', 'c', 'd', 'sub'] });
    channel.vote('a', 'q', 'x');
    channel.vote('b', 'q', 'x');
    channel.vote('c', 'q', 'y');
    expect(status(channel).status).toBe('open');
    channel.vote('d', 'q', 'x');
    expect(status(channel)).toEqual({ status: 'decided', winner: 'x', reason: null });
  });

  it('plurality: a tie is no decision', () => {
    const channel = open({ rule: 'plurality', voters: ['a', 'b'] });
    channel.vote('a', 'q', 'x');
    channel.vote('b', 'q', 'y');
    expect(status(channel)).toEqual({ status: 'no_decision', winner: null, reason: 'a tie between "x" and "y" (1 each)' });
  });

  it('plurality: the most votes win without a majority', () => {
    const channel = open({ rule: 'plurality', voters: ['a', 'b', 'c', 'd', 'sub'] });
    for (const [voter, option] of [
      ['a', 'x'],
      ['b', 'x'],
      ['c', 'y'],
      ['d', 'z'],
      ['sub', 'y'],
    ] as const)
      channel.vote(voter, 'q', option);
    expect(status(channel)).toEqual({ status: 'no_decision', winner: null, reason: 'a tie between "x" and "y" (2 each)' });
    const again = open({ rule: 'plurality', voters: ['a', 'b', 'c', 'd', 'sub'] });
    for (const [voter, option] of [
      ['a', 'x'],
      ['b', 'x'],
      ['c', 'y'],
      ['d', 'z'],
      ['sub', 'x'],
    ] as const)
      again.vote(voter, 'q', option);
    expect(status(again).winner).toBe('x');
  });

  it('unanimous: decided when every voter chose the same option', () => {
    const channel = open({ rule: 'unanimous' });
    channel.vote('a', 'q', 'y');
    channel.vote('b', 'q', 'y');
    expect(status(channel).status).toBe('open');
    channel.vote('c', 'q', 'y');
    expect(status(channel)).toEqual({ status: 'decided', winner: 'y', reason: null });
  });

  it('unanimous: no decision as soon as two voters disagree', () => {
    const channel = open({ rule: 'unanimous' });
    channel.vote('a', 'q', 'x');
    channel.vote('b', 'q', 'y');
    expect(status(channel)).toEqual({ status: 'no_decision', winner: null, reason: 'the voters disagree' });
  });

  it('quorum: no early decision before the quorum, and no decision at the deadline without it', () => {
    const channel = open({ rule: 'plurality', quorum: 3, deadline_turns: 2 });
    channel.vote('a', 'q', 'x');
    channel.vote('b', 'q', 'x');
    expect(status(channel).status).toBe('open');
    channel.turnEnded('a');
    expect(status(channel).status).toBe('open');
    channel.turnEnded('b');
    expect(status(channel)).toEqual({ status: 'no_decision', winner: null, reason: 'the quorum was not reached (2 of 3 votes)' });
  });

  it('deadline: the rule is applied to the votes cast when the deadline passes', () => {
    const channel = open({ rule: 'majority', deadline_turns: 1 });
    channel.vote('a', 'q', 'z');
    channel.turnEnded('c');
    expect(status(channel)).toEqual({ status: 'decided', winner: 'z', reason: null });
  });

  it('deadline: no votes at all is no decision', () => {
    const channel = open({ deadline_turns: 1 });
    channel.turnEnded('a');
    expect(status(channel)).toEqual({ status: 'no_decision', winner: null, reason: 'no votes were cast' });
  });

  it('expire: closes with the votes cast, as when no voter can vote any more', () => {
    const channel = open({ rule: 'plurality' });
    channel.vote('a', 'q', 'y');
    expect(channel.expire('q')).toMatchObject({ status: 'decided', winner: 'y' });
  });
});

describe('resolution and cancel', () => {
  it('posts the result to the proposer and the voters', () => {
    const channel = open();
    channel.vote('a', 'q', 'x', 'fine');
    channel.vote('b', 'q', 'x');
    const result = channel.message(channel.length)!;
    expect(result.kind).toBe('system');
    expect(result.recipients).toEqual(['lead', 'a', 'b', 'c']);
    expect(result.text).toBe('Proposal "q" is decided: "x" (votes: "x" 2, "y" 0, "z" 0; rule: majority).');
  });

  it('lets only the proposer cancel', () => {
    const channel = open();
    expect(() => channel.cancel('a', 'q')).toThrow(new ChannelError('only @lead, who opened proposal "q", can cancel it'));
    expect(channel.cancel('lead', 'q').status).toBe('cancelled');
    expect(channel.message(channel.length)!.text).toBe('Proposal "q" was cancelled by @lead.');
    expect(() => channel.cancel('lead', 'q')).toThrow('proposal "q" is closed already (cancelled)');
  });

  it('answers whether a proposal still waits on someone', () => {
    const channel = open();
    expect(channel.waitingVoters()).toEqual([{ proposal: 'q', voters: ['a', 'b', 'c'] }]);
    channel.vote('b', 'q', 'y');
    expect(channel.waitingVoters()).toEqual([{ proposal: 'q', voters: ['a', 'c'] }]);
    channel.vote('c', 'q', 'y');
    expect(channel.waitingVoters()).toEqual([]);
  });
});
