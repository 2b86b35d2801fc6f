import { describe, expect, it } from 'vitest';
import { ballotDigest, ballotOf, parseVoteCommand, voteCommand } from '../../src/session/ballot.js';

const PROPOSAL = {
  id: 'verdict',
  proposer: 'lead',
  question: 'Merge?',
  options: ['approve', 'approve with changes'],
  voters: ['@octocat', 'reviewer'],
  rule: 'majority',
  status: 'open',
  votes: { reviewer: { option: 'approve', reason: 'fine' } },
  deadline_ms: 60_000,
};
const HEAD = 'a'.repeat(40);
const RUN = '20261127T000000Z-abcdef';
const BOUND = { run: RUN, head: HEAD };

describe('ballots', () => {
  it('a digest changes with every part of the proposal as shown, with the head, and with the run', () => {
    const digest = ballotDigest(PROPOSAL, BOUND);
    expect(digest).toMatch(/^[0-9a-f]{12}$/);
    expect(ballotDigest({ ...PROPOSAL }, BOUND)).toBe(digest);
    const changed = [
      { ...PROPOSAL, id: 'verdict2' },
      { ...PROPOSAL, question: 'Merge now?' },
      { ...PROPOSAL, options: [...PROPOSAL.options].reverse() },
      { ...PROPOSAL, voters: ['@octocat'] },
      { ...PROPOSAL, rule: 'unanimous' },
    ];
    for (const p of changed) expect(ballotDigest(p, BOUND)).not.toBe(digest);
    expect(ballotDigest(PROPOSAL, { run: RUN, head: 'b'.repeat(40) })).not.toBe(digest);
    expect(ballotDigest(PROPOSAL, { run: RUN, head: undefined })).not.toBe(digest);
    // Another run's ballot of the same proposal, on the same head, is another ballot.
    expect(ballotDigest(PROPOSAL, { run: '20261127T000001Z-fedcba', head: HEAD })).not.toBe(digest);
  });

  it('shows the seats waited for, the deadline, and a command per option that parses back to it', () => {
    const ballot = ballotOf(PROPOSAL, BOUND, Date.UTC(2026, 10, 27));
    expect(ballot.waiting_for).toEqual(['@octocat']);
    expect(ballot.deadline).toBe('2026-11-27T00:01:00.000Z');
    expect(ballot.commands['approve with changes']).toBe(`/conclave vote verdict "approve with changes" ${ballot.digest}`);
    for (const option of PROPOSAL.options) {
      expect(parseVoteCommand(`${ballot.commands[option]}  because\nit is good `)).toEqual({
        proposal: 'verdict',
        option,
        digest: ballot.digest,
        reason: 'because\nit is good',
      });
    }
    expect(voteCommand('p1', 'a"b', 'abcdefabcdef')).toBe('/conclave vote p1 "a\\"b" abcdefabcdef');
    expect(parseVoteCommand('/conclave vote p1 "a\\"b" abcdefabcdef')?.option).toBe('a"b');
  });

  it('takes nothing but one whole command', () => {
    for (const body of [
      '',
      'hi /conclave vote p1 yes abcdefabcdef',
      '/conclave vote p1 yes ABCDEFABCDEF',
      '/conclave vote p1 "yes abcdefabcdef',
      '/conclave votes p1 yes abcdefabcdef',
    ])
      expect(parseVoteCommand(body)).toBeUndefined();
  });
});
