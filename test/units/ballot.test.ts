import { describe, expect, it } from 'vitest';
import { ballotDigest, ballotOf, ballotsOf, parseVoteCommand, peopleSeatsOpen, voteCommand } from '../../src/session/ballot.js';

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

  it('a proposal that asks consent binds the vote to its call: another call, another digest; the ballot shows the call', () => {
    const action = { tool: 'run_command', input: { command: 'make deploy' } };
    const consent = { ...PROPOSAL, action };
    expect(ballotDigest(consent, BOUND)).not.toBe(ballotDigest(PROPOSAL, BOUND));
    expect(ballotDigest(consent, BOUND)).not.toBe(ballotDigest({ ...PROPOSAL, action: { ...action, input: { command: 'make other' } } }, BOUND));
    expect(ballotOf(consent, BOUND).action).toEqual(action);
    expect(ballotOf(PROPOSAL, BOUND)).not.toHaveProperty('action');
  });

  it('a ballot is a copy: what it shows does not change with the proposal, and it shows the advice only when there is some', () => {
    const p = { ...PROPOSAL, options: [...PROPOSAL.options], votes: { ...PROPOSAL.votes }, advice: {} as Record<string, { option: string; reason: string }> };
    const ballot = ballotOf(p, BOUND);
    expect(ballot).toMatchObject({ proposal: 'verdict', question: 'Merge?', proposer: 'lead', rule: 'majority' });
    expect(ballot).not.toHaveProperty('advice');
    expect(ballot).not.toHaveProperty('deadline'); // the opening time is not known
    p.options.push('reject');
    p.votes['@octocat'] = { option: 'approve', reason: '' };
    expect(ballot.options).toEqual(PROPOSAL.options);
    expect(ballot.votes).toEqual(PROPOSAL.votes);
    const advised = ballotOf({ ...PROPOSAL, advice: { reviewer: { option: 'approve', reason: 'fine' } } }, BOUND);
    expect(advised.advice).toEqual({ reviewer: { option: 'approve', reason: 'fine' } });
    expect(ballotOf({ ...PROPOSAL, deadline_ms: undefined }, BOUND, 0)).not.toHaveProperty('deadline');
  });

  it("waits only for people's seats of an open proposal that have not voted", () => {
    expect(peopleSeatsOpen({ ...PROPOSAL, voters: ['@octocat', '@acme/maintainers', 'reviewer'] })).toEqual(['@octocat', '@acme/maintainers']);
    expect(peopleSeatsOpen({ ...PROPOSAL, votes: { '@octocat': { option: 'approve', reason: '' } } })).toEqual([]);
    expect(peopleSeatsOpen({ ...PROPOSAL, status: 'decided' })).toEqual([]);
  });

  it("a session's ballots: only the proposals that wait for people, each with its own deadline", () => {
    const agentsOnly = { ...PROPOSAL, id: 'style', voters: ['reviewer'] };
    const ballots = ballotsOf([{ ...PROPOSAL, opened_at_ms: Date.UTC(2026, 10, 27) }, agentsOnly, { ...PROPOSAL, id: 'late', status: 'closed' }], BOUND);
    expect(ballots.map((b) => [b.proposal, b.deadline])).toEqual([['verdict', '2026-11-27T00:01:00.000Z']]);
  });

  it('reads the option and the reason as written: a quoted option whole, white space around the command and the reason trimmed', () => {
    expect(parseVoteCommand('  /conclave vote p1 "say \\"no\\"" abcdefabcdef \n\n  late reason  ')).toEqual({
      proposal: 'p1',
      option: 'say "no"',
      digest: 'abcdefabcdef',
      reason: 'late reason',
    });
    expect(parseVoteCommand('/conclave vote p1 yes abcdefabcdef')).toEqual({ proposal: 'p1', option: 'yes', digest: 'abcdefabcdef', reason: '' });
    // A bare option that ends with a quote is no quoted option.
    expect(parseVoteCommand('/conclave vote p1 yes" abcdefabcdef')).toBeUndefined();
  });
});
