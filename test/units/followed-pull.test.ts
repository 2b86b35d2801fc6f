import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { followedPull } from '../../src/cli/github/followed-pull.js';
import { type FakeGitHub, startFakeGitHub } from '../fake-github/server.js';

/** The pull request a workflow_run job reviews, taken from the followed run's artifact only when GitHub agrees (cli/github/followed-pull.ts), from source. */
const REPO = 'octo/widgets';
const SHA = 'a'.repeat(40);
const NEWER = 'b'.repeat(40);
let gitHub: FakeGitHub;
beforeAll(async () => {
  gitHub = await startFakeGitHub(REPO, 7);
});
afterAll(() => gitHub.close());
beforeEach(() => {
  gitHub.people.head = SHA;
  gitHub.people.headRepo = 'fork/widgets';
  gitHub.people.pull = { ref: 'feature' };
  delete gitHub.people.fail;
});

const env = () => ({ GITHUB_API_URL: gitHub.url, GITHUB_TOKEN: 'ghs_test_1', GITHUB_REPOSITORY: REPO });
const event = (run: Record<string, unknown> = {}) => ({
  workflow_run: { head_sha: SHA, head_branch: 'feature', head_repository: { full_name: 'fork/widgets' }, ...run },
});

describe('the pull request a workflow_run job follows', () => {
  it('is taken when GitHub says its head is the commit and repository the followed run ran', async () => {
    const followed = await followedPull(event(), ' 7 ', env());
    expect(followed).toMatchObject({ number: 7, pull: { number: 7, head: { sha: SHA } } });
    expect(gitHub.requests.at(-1)).toMatchObject({ method: 'GET', path: `/repos/${REPO}/pulls/7`, authorization: 'Bearer ghs_test_1' });
  });

  it("a number that is not a pull request's is refused before GitHub is asked", async () => {
    const asked = gitHub.requests.length;
    for (const given of ['0', '07', '-7', '7a', '', '1234567890', '#7', '1e3'])
      expect(await followedPull(event(), given, env())).toEqual({ refused: `pull-request must be a pull request's number; found ${JSON.stringify(given)}` });
    expect(await followedPull(event(), '123456789', env())).toMatchObject({ refused: 'pull request #123456789 was not found in octo/widgets' });
    expect(gitHub.requests.length).toBe(asked + 1);
  });

  it('an event that does not say the commit or repository the run ran is refused', async () => {
    const refusal = { refused: 'pull-request is for a workflow_run job: the event does not say which commit the run it follows ran' };
    expect(await followedPull({}, '7', env())).toEqual(refusal);
    expect(await followedPull(event({ head_sha: '' }), '7', env())).toEqual(refusal);
    expect(await followedPull(event({ head_repository: null }), '7', env())).toEqual(refusal);
  });

  it('without a token, a repository or a GitHub that answers, it is refused', async () => {
    const noToken = { refused: 'pull request #7 could not be asked of GitHub (no GITHUB_TOKEN)' };
    expect(await followedPull(event(), '7', { ...env(), GITHUB_TOKEN: '' })).toEqual(noToken);
    expect(await followedPull(event(), '7', { ...env(), GITHUB_REPOSITORY: undefined })).toEqual(noToken);
    gitHub.people.fail = 'error';
    const failed = await followedPull(event(), '7', env());
    expect(failed).toEqual({ refused: `pull request #7 could not be asked of GitHub: GitHub answered GET /repos/${REPO}/pulls/7 with 500: Server Error` });
  });

  it('a pull request GitHub does not have is refused by its number', async () => {
    delete gitHub.people.head;
    expect(await followedPull(event(), '7', env())).toEqual({ refused: 'pull request #7 was not found in octo/widgets' });
  });

  it('pushed to since (same repository and branch): moved on, the newer run reviews it', async () => {
    gitHub.people.head = NEWER;
    expect(await followedPull(event(), '7', env())).toEqual({
      moved: `pull request #7 has moved on to ${NEWER.slice(0, 12)} since the run this job follows (fork/widgets@${SHA.slice(0, 12)}): the newer commit's run reviews it`,
    });
  });

  it('another repository, another branch, or a run that names no branch: refused, saying both heads', async () => {
    const refused = (head: string, repo: string) =>
      `pull request #7 is not the one the followed run ran: its head is ${repo}@${head.slice(0, 12)}, ` +
      `the run ran fork/widgets@${SHA.slice(0, 12)} (the number comes from that run's artifact, which its code wrote)`;
    gitHub.people.headRepo = 'other/widgets';
    expect(await followedPull(event(), '7', env())).toEqual({ refused: refused(SHA, 'other/widgets') });
    gitHub.people.headRepo = 'fork/widgets';
    gitHub.people.head = NEWER;
    gitHub.people.pull = { ref: 'main' };
    expect(await followedPull(event(), '7', env())).toEqual({ refused: refused(NEWER, 'fork/widgets') });
    gitHub.people.pull = { ref: '' };
    expect(await followedPull(event({ head_branch: '' }), '7', env())).toEqual({ refused: refused(NEWER, 'fork/widgets') });
    // A deleted fork: GitHub names no repository.
    gitHub.people.headRepo = null;
    expect(await followedPull(event(), '7', env())).toMatchObject({ refused: expect.stringContaining('its head is unknown@bbbbbbbbbbbb') });
  });

  it('the same commit in another repository is not the pull request the run ran', async () => {
    gitHub.people.headRepo = 'octo/widgets';
    expect(await followedPull(event(), '7', env())).toMatchObject({ refused: expect.stringContaining('its head is octo/widgets@aaaaaaaaaaaa') });
  });
});
