import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkedVote, RunStale, VoteRefused } from '../../src/cli/votes/vote-checks.js';
import type { VoteAsked } from '../../src/cli/votes/vote-source.js';
import { readSession, type SessionRecord } from '../../src/session/reader.js';
import { summarize } from '../../src/session/summary.js';
import { type FakeGitHub, startFakeGitHub } from '../fake-github/server.js';

/**
 * A person's vote checked before anything is recorded (docs/security.md: votes from people), rule
 * by rule, against a session the CLI parked for people and a fake GitHub. The same rules through
 * the CLI: test/e2e/people-votes.test.ts; through the Action: people-recipe.test.ts.
 */
const REPOSITORY = 'octo/widgets';
const PULL = 7;
const HEAD = '1'.repeat(40);
let github: FakeGitHub;
let record: SessionRecord;
let digest: string;

/**
 * test/fixtures/sessions/parked-for-people.jsonl: a run the CLI parked for people (`run --park` in
 * GitHub Actions on pull request 7 at head 111…, proposal "verdict" to @octocat and
 * @acme/maintainers, deadline 1h), moved in time so that its last event is now. Read from a file,
 * not made by the CLI here: Stryker runs these tests against its mutants, and no built CLI.
 */
function parkedSession(change: (events: Record<string, unknown>[]) => Record<string, unknown>[] = (events) => events): SessionRecord {
  const lines = readFileSync(fileURLToPath(new URL('../fixtures/sessions/parked-for-people.jsonl', import.meta.url)), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const shift = Date.now() - Math.max(...lines.map((e) => e.at_ms ?? 0));
  const moved = change(lines.map((e) => (e.at_ms === undefined ? e : { ...e, at_ms: e.at_ms + shift })));
  const file = join(mkdtempSync(join(tmpdir(), 'conclave-vote-checks-')), 'parked.jsonl');
  writeFileSync(file, `${moved.map((e) => JSON.stringify(e)).join('\n')}\n`);
  return readSession(file);
}

beforeAll(async () => {
  github = await startFakeGitHub(REPOSITORY, PULL);
  record = parkedSession();
  digest = summarize(record).ballots[0]!.digest;
});

afterAll(() => github.close());

beforeEach(() => {
  github.people.head = HEAD;
  github.people.permissions = { octocat: 'write', alice: 'admin', reader: 'read' };
  github.people.teams = { 'acme/maintainers': ['alice'] };
  github.people.pending = undefined;
  github.people.fail = undefined;
});

const ballotDigestOf = (r: SessionRecord) => summarize(r).ballots[0]!.digest;
const ENV = () => ({ GITHUB_API_URL: github.url, GITHUB_TOKEN: 'ghs_test_token', GITHUB_REPOSITORY: REPOSITORY });
const ask = (fields: Partial<VoteAsked> = {}): VoteAsked => ({ proposal: 'verdict', option: 'approve', digest, reason: 'fine', voter: 'octocat', ...fields });
const refusal = async (asked: VoteAsked, env: NodeJS.ProcessEnv = ENV(), of: SessionRecord = record) => {
  const e = await checkedVote(of, asked, env).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(VoteRefused);
  return (e as Error).message.replace(/^vote refused, nothing recorded: /, '');
};

describe('a vote checked before it is recorded', () => {
  it('a named person with write permission: the vote, with the seat, the permission and no comment', async () => {
    const vote = await checkedVote(record, ask(), ENV());
    expect(vote).toMatchObject({
      proposal: 'verdict',
      seat: '@octocat',
      voter: 'octocat',
      option: 'approve',
      reason: 'fine',
      digest,
      comment: null,
      permission: 'write',
    });
    expect(Date.parse(vote.at)).not.toBeNaN();
  });

  it('a team member fills the team seat; an invitation not yet accepted, or no membership, fills none', async () => {
    expect((await checkedVote(record, ask({ voter: 'alice' }), ENV())).seat).toBe('@acme/maintainers');
    github.people.permissions.carol = 'write';
    github.people.pending = { 'acme/maintainers': ['carol'] };
    expect(await refusal(ask({ voter: 'carol' }))).toBe('@carol is not an active member of @acme/maintainers, and the proposal names @carol in no other way');
  });

  it('the proposal must exist, be open and offer the option', async () => {
    expect(await refusal(ask({ proposal: 'other' }))).toBe('the session has no proposal "other" (it has "verdict")');
    expect(await refusal(ask({ option: 'maybe' }))).toBe('"maybe" is not an option of proposal "verdict" ("approve", "reject")');
  });

  it('the digest is that of the proposal as shown in this run, on the head it reviewed', async () => {
    expect(await refusal(ask({ digest: '000000000000' }))).toBe(
      'the digest 000000000000 is not that of proposal "verdict" as this run shows it: the ballot is stale, or another run\'s',
    );
    github.people.head = '2'.repeat(40);
    const stale = await checkedVote(record, ask(), ENV()).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(RunStale);
    expect((stale as RunStale).closing).toBe(
      'pull request #7 moved on to 222222222222 since this run reviewed 111111111111: the run is closed without a decision, and the run for 222222222222 has its own ballot',
    );
  });

  it('write permission or above, as GitHub says it; GitHub silent or failing refuses', async () => {
    github.people.permissions.octocat = 'read';
    expect(await refusal(ask())).toBe('@octocat has read permission on octo/widgets; a vote needs write (or maintain, or admin)');
    github.people.permissions.octocat = 'write';
    github.people.fail = 'error';
    expect(await refusal(ask())).toMatch(
      /^GitHub answered GET \/repos\/octo\/widgets\/collaborators\/octocat\/permission with 500.*: a vote GitHub cannot vouch for is refused$/,
    );
  });

  it('someone the proposal does not name is refused before GitHub is asked; so is a vote without a token or a repository', async () => {
    const asked = github.requests.length;
    expect(await refusal(ask({ voter: 'mallory' }))).toBe(
      '@mallory is not an active member of @acme/maintainers, and the proposal names @mallory in no other way',
    );
    expect(github.requests.length).toBeGreaterThan(asked); // a team seat is asked of GitHub
    expect(await refusal(ask(), { GITHUB_API_URL: github.url, GITHUB_REPOSITORY: REPOSITORY })).toBe(
      'a vote is checked with GitHub, and GITHUB_TOKEN is not set (in the Action: the github-token input)',
    );
  });

  it('a comment: on this pull request, not edited, not older than the proposal, and the same on GitHub', async () => {
    const opened = summarize(record).proposals[0]!.opened_at_ms!;
    const comment = github.comment(`/conclave vote verdict approve ${digest} fine`, 'octocat');
    const seen = (fields: Partial<NonNullable<VoteAsked['comment']>> = {}) =>
      ask({
        comment: {
          kind: 'issue_comment',
          id: comment.id,
          url: comment.html_url,
          body: comment.body,
          createdAt: comment.created_at,
          updatedAt: comment.updated_at,
          number: PULL,
          repository: REPOSITORY,
          ...fields,
        },
      });
    expect((await checkedVote(record, seen(), ENV())).comment).toEqual({ id: comment.id, url: comment.html_url });
    expect(await refusal(seen({ number: 8 }))).toBe('the comment is on #8, and the run is on pull request #7');
    expect(await refusal(seen({ updatedAt: new Date(Date.parse(comment.created_at) + 5000).toISOString() }))).toMatch(
      /^the comment was edited after it was made/,
    );
    const early = new Date(opened - 60_000).toISOString();
    expect(await refusal(seen({ createdAt: early, updatedAt: early }))).toMatch(/^the comment \(.*\) is older than proposal "verdict"/);
    expect(await refusal(seen({ body: `${comment.body} and more` }))).toBe(
      'the comment was edited after it was made (its text on GitHub differs from the event)',
    );
    expect(await refusal(seen({ id: 999_999 }))).toBe('the comment is no longer there');
    const late = new Date(opened + 2 * 3_600_000).toISOString();
    expect(await refusal(seen({ createdAt: late, updatedAt: late }))).toMatch(/^the vote came after proposal "verdict"'s deadline/);
  });

  it('a proposal that names the person in no way, or is over, takes no vote from them', async () => {
    const onlyOctocat = parkedSession((events) =>
      events.map((e) => (e.type === 'proposal_opened' ? { ...e, proposal: { ...(e.proposal as object), voters: ['@octocat'] } } : e)),
    );
    expect(await refusal(ask({ voter: 'mallory' }), ENV(), onlyOctocat)).toBe('@mallory is not among the voters of proposal "verdict" (@octocat)');
    const closed = parkedSession((events) => {
      const last = events.at(-1)!;
      const closing = { seq: last.seq, type: 'proposal_closed', proposal: 'verdict', status: 'no_decision', winner: null, reason: 'deadline' };
      return [...events.slice(0, -1), closing, { ...last, seq: (last.seq as number) + 1 }];
    });
    expect(await refusal(ask(), ENV(), closed)).toBe('proposal "verdict" is closed (no decision)');
  });

  it("a run on no pull request is checked against the job's repository, which must be one", async () => {
    const nowhere = parkedSession((events) => events.map((e) => (e.type === 'header' ? { ...e, github: undefined } : e)));
    expect(await refusal(ask(), { ...ENV(), GITHUB_REPOSITORY: 'not a repository' }, nowhere)).toBe(
      'the repository to check the voter against is not known: set GITHUB_REPOSITORY',
    );
    expect(await refusal(ask(), { ...ENV(), GITHUB_REPOSITORY: 'octo/widgets/extra' }, nowhere)).toMatch(/^the repository to check the voter against/);
    expect((await checkedVote(nowhere, ask({ digest: ballotDigestOf(nowhere) }), ENV())).seat).toBe('@octocat');
    const headless = parkedSession((events) => events.map((e) => (e.type === 'header' ? { ...e, github: { ...(e.github as object), head: undefined } } : e)));
    expect(await refusal(ask(), ENV(), headless)).toBe(
      'the run did not record the head of pull request #7 when it started, so no vote can be bound to what it reviewed',
    );
  });

  it('GitHub that does not say the head refuses the vote', async () => {
    github.people.head = undefined;
    expect(await refusal(ask())).toBe('GitHub did not say the head of pull request #7: a vote GitHub cannot vouch for is refused');
  });

  it("a comment's time: up to a second before the proposal (clocks), and up to its deadline exactly", async () => {
    const opened = summarize(record).proposals[0]!.opened_at_ms!;
    const comment = github.comment(`/conclave vote verdict approve ${digest}`, 'octocat');
    const at = (ms: number, fields: Partial<NonNullable<VoteAsked['comment']>> = {}) => {
      const t = new Date(ms).toISOString();
      const seen = { kind: 'issue_comment' as const, id: comment.id, url: comment.html_url, body: comment.body, createdAt: t, updatedAt: t };
      return ask({ comment: { ...seen, number: PULL, repository: REPOSITORY, ...fields } });
    };
    expect((await checkedVote(record, at(opened - 500), ENV())).seat).toBe('@octocat');
    expect(await refusal(at(opened - 1500))).toMatch(/is older than proposal "verdict"/);
    expect((await checkedVote(record, at(opened + 3_600_000), ENV())).seat).toBe('@octocat');
    expect(await refusal(at(opened + 3_600_001))).toBe(
      `the vote came after proposal "verdict"'s deadline (${new Date(opened + 3_600_000).toISOString()}): it closes by its rule with the votes cast when the run is resumed`,
    );
    expect(await refusal(at(opened, { createdAt: 'yesterday', updatedAt: 'yesterday' }))).toBe('the comment\'s time "yesterday" is not a time');
    expect(await refusal(at(opened, { repository: 'Mallory/Widgets' }))).toBe("the comment is in Mallory/Widgets, and the run is octo/widgets's");
    expect((await checkedVote(record, at(opened, { repository: 'Octo/Widgets' }), ENV())).seat).toBe('@octocat');
  });

  it("GitHub's copy of the comment decides: another author, an edit on GitHub, a review looked up among reviews", async () => {
    const seen = (c: { id: number; body: string; html_url: string; created_at: string }, kind: 'issue_comment' | 'review' = 'issue_comment') =>
      ask({
        comment: { kind, id: c.id, url: c.html_url, body: c.body, createdAt: c.created_at, updatedAt: c.created_at, number: PULL, repository: REPOSITORY },
      });
    const byOther = github.comment(`/conclave vote verdict approve ${digest}`, 'mallory');
    expect(await refusal(seen(byOther))).toBe("GitHub's copy of the comment has another author");
    const edited = github.comment(`/conclave vote verdict approve ${digest}`, 'OctoCat');
    expect((await checkedVote(record, seen(edited), ENV())).voter).toBe('octocat');
    edited.updated_at = new Date(Date.parse(edited.created_at) + 60_000).toISOString();
    expect(await refusal(seen(edited))).toBe(`the comment was edited after it was made (${edited.updated_at})`);
    // A review is not an issue comment: GitHub is asked for it among the pull request's reviews (none here).
    const review = github.comment(`/conclave vote verdict approve ${digest}`, 'octocat');
    expect(await refusal(seen(review, 'review'))).toBe('the comment is no longer there');
  });
});
