import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventTrust } from '../../src/cli/github/event-trust.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { type FakeGitHub, startFakeGitHub } from '../fake-github/server.js';

/**
 * Whether a run's event is a stranger's (docs/security.md: untrusted content), rule by rule, with
 * a fake GitHub answering permissions and pull requests. The same rules through the CLI and the
 * Action: test/e2e/event-trust.test.ts, fork-recipe.test.ts.
 */
const REPO = 'octo/widgets';
const PULL = 7;
const HEAD = 'b'.repeat(40);
let gitHub: FakeGitHub;
const dir = mkdtempSync(join(tmpdir(), 'conclave-event-trust-'));
let events = 0;

beforeAll(async () => {
  gitHub = await startFakeGitHub(REPO, PULL);
});
afterAll(() => gitHub.close());
beforeEach(() => {
  gitHub.people.permissions = { maya: 'maintain', writer: 'write', reader: 'read' };
  gitHub.people.head = HEAD;
  gitHub.people.headRepo = undefined;
  gitHub.people.pullAuthor = 'maya';
  gitHub.people.pull = { ref: 'feature', title: 'A title', body: 'A body' };
  gitHub.people.fail = undefined;
});

function env(name: string, payload: unknown, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const file = join(dir, `event-${++events}.json`);
  writeFileSync(file, typeof payload === 'string' ? payload : JSON.stringify(payload));
  return {
    GITHUB_ACTIONS: 'true',
    GITHUB_EVENT_NAME: name,
    GITHUB_EVENT_PATH: file,
    GITHUB_REPOSITORY: REPO,
    GITHUB_API_URL: gitHub.url,
    GITHUB_TOKEN: 'ghs_test_token',
    ...extra,
  };
}

const pull = (head: { full_name?: string; fork?: boolean } | null, user = 'maya') => ({
  number: PULL,
  title: 'Fix it',
  body: 'Please merge',
  user: { login: user },
  head: { sha: HEAD, repo: head },
  base: { repo: { full_name: REPO } },
});

describe('eventTrust', () => {
  it('outside Actions, or with no event file, there is nothing to judge', async () => {
    expect(await eventTrust({})).toEqual({});
    expect(await eventTrust({ ...env('issues', {}), GITHUB_ACTIONS: 'false' })).toEqual({});
    expect(await eventTrust({ ...env('issues', {}), GITHUB_EVENT_PATH: '' })).toEqual({});
    expect(await eventTrust({ ...env('issues', {}), GITHUB_EVENT_NAME: '' })).toEqual({});
  });

  it('an event file that cannot be read is a stranger’s; one that is not an object holds nothing', async () => {
    const unreadable = await eventTrust({ ...env('issues', {}), GITHUB_EVENT_PATH: join(dir, 'missing.json') });
    expect(unreadable.trust).toEqual({ untrusted: true, why: `the event file ${join(dir, 'missing.json')} could not be read, so its author is not known` });
    const list = await eventTrust(env('push', '[1, 2]'));
    expect(list.event).toEqual({ event_name: 'push', title: '', body: '', comment: '', author: '' });
    expect(list.trust).toEqual({ untrusted: false, why: "a push event of the repository's own" });
  });

  it('pull_request_target is always a stranger’s', async () => {
    const { trust } = await eventTrust(env('pull_request_target', { pull_request: pull({ full_name: REPO }) }));
    expect(trust).toEqual({ untrusted: true, why: "a pull_request_target event: the pull request's text and code are its author's" });
  });

  it('a pull request from a fork, or from a fork GitHub marks as one, or whose head is gone, is a stranger’s; one of the repository is its author’s', async () => {
    const fork = await eventTrust(env('pull_request', { pull_request: pull({ full_name: 'mallory/widgets' }) }));
    expect(fork.trust).toEqual({ untrusted: true, why: 'a pull request from the fork mallory/widgets' });
    const marked = await eventTrust(env('pull_request', { pull_request: pull({ full_name: REPO, fork: true }) }));
    expect(marked.trust).toEqual({ untrusted: true, why: `a pull request from the fork ${REPO}` });
    const gone = await eventTrust(env('pull_request', { pull_request: pull(null) }));
    expect(gone.trust).toEqual({ untrusted: true, why: 'a pull request whose head repository is not known (a deleted fork)' });
    const own = await eventTrust(env('pull_request', { pull_request: pull({ full_name: REPO }) }));
    expect(own.trust).toEqual({ untrusted: false, why: "a pull_request event of the repository's own" });
    expect(own.event).toEqual({ event_name: 'pull_request', title: 'Fix it', body: 'Please merge', comment: '', author: 'maya' });
    expect(own.head).toBeUndefined(); // in the event: the head is the event's, not asked
  });

  it("a workflow_run is a stranger's when the run it follows ran a fork's code, or GitHub does not say whose", async () => {
    const run = (head_repository: unknown) => ({ workflow_run: { head_repository }, repository: { full_name: REPO } });
    expect((await eventTrust(env('workflow_run', run({ full_name: 'mallory/widgets' })))).trust).toEqual({
      untrusted: true,
      why: 'a workflow_run of a run of the fork mallory/widgets',
    });
    expect((await eventTrust(env('workflow_run', run(null)))).trust).toEqual({ untrusted: true, why: 'a workflow_run of a run whose repository is not known' });
    expect((await eventTrust(env('workflow_run', run({ full_name: REPO })))).trust).toEqual({
      untrusted: false,
      why: "a workflow_run event of the repository's own",
    });
    // The repository from the environment when the event does not say it.
    const noBase = { workflow_run: { head_repository: { full_name: REPO } } };
    expect((await eventTrust(env('workflow_run', noBase))).trust?.untrusted).toBe(false);
  });

  it('an issue is trusted by its author’s permission, asked of GitHub; read, none, unknown or unaskable is a stranger’s', async () => {
    const issue = (login: string) => ({ issue: { number: 3, title: 'T', body: 'B', user: { login } } });
    expect((await eventTrust(env('issues', issue('writer')))).trust).toEqual({ untrusted: false, why: 'an issues by @writer, who has write permission' });
    expect((await eventTrust(env('issues', issue('reader')))).trust).toEqual({ untrusted: true, why: 'an issues by @reader, who has read permission' });
    expect((await eventTrust(env('issues', issue('nobody')))).trust).toEqual({ untrusted: true, why: 'an issues by @nobody, who has no permission' });
    expect((await eventTrust(env('issues', issue('')))).trust).toEqual({ untrusted: true, why: 'an issues whose author is not known' });
    const noToken = await eventTrust({ ...env('issues', issue('writer')), GITHUB_TOKEN: '' });
    expect(noToken.trust).toEqual({ untrusted: true, why: 'an issues by @writer, whose permission could not be asked (no GITHUB_TOKEN)' });
    gitHub.people.fail = 'error';
    const failed = await eventTrust(env('issues', issue('writer')));
    expect(failed.trust?.untrusted).toBe(true);
    expect(failed.trust?.why).toMatch(/^an issues by @writer, whose permission GitHub did not say \(GitHub answered GET .* with 500/);
  });

  it('a comment and the issue it is on are each judged by their own author; the texts that are the repository’s own are named', async () => {
    const payload = (commenter: string, opener: string) => ({
      issue: { number: 3, title: 'T', body: 'B', user: { login: opener } },
      comment: { body: 'C', user: { login: commenter } },
    });
    const mixed = await eventTrust(env('issue_comment', payload('maya', 'reader')));
    expect(mixed.trust).toEqual({ untrusted: true, why: 'the issue by @reader, who has read permission', own: ['comment'] });
    expect(mixed.event).toEqual({ event_name: 'issue_comment', title: 'T', body: 'B', comment: 'C', author: 'maya' });
    const stranger = await eventTrust(env('issue_comment', payload('reader', 'maya')));
    expect(stranger.trust).toEqual({ untrusted: true, why: 'an issue_comment by @reader, who has read permission', own: ['title', 'body'] });
    // One author of both: asked once, judged once.
    const asked = gitHub.requests.length;
    const same = await eventTrust(env('issue_comment', payload('Writer', 'writer')));
    expect(same.trust).toEqual({ untrusted: false, why: 'an issue_comment by @Writer, who has write permission' });
    expect(gitHub.requests.length - asked).toBe(1);
  });

  it("a comment on a pull request asks GitHub for the pull request: its head is kept, and a fork's makes every text a stranger's", async () => {
    const payload = { issue: { number: PULL, pull_request: { url: 'x' }, user: { login: 'maya' } }, comment: { body: 'C', user: { login: 'maya' } } };
    const own = await eventTrust(env('issue_comment', payload));
    expect(own.head).toBe(HEAD);
    expect(own.trust?.untrusted).toBe(false);
    gitHub.people.headRepo = 'mallory/widgets';
    expect((await eventTrust(env('issue_comment', payload))).trust).toEqual({ untrusted: true, why: 'a pull request from the fork mallory/widgets' });
    gitHub.people.head = undefined; // GitHub answers 404
    expect((await eventTrust(env('issue_comment', payload))).trust).toEqual({
      untrusted: true,
      why: `an issue_comment on a pull request GitHub did not say (pull request #${PULL} was not found)`,
    });
    const noNumber = { ...payload, issue: { ...payload.issue, number: 'seven' } };
    expect((await eventTrust(env('issue_comment', noNumber))).trust?.why).toBe(
      'an issue_comment on a pull request GitHub did not say (a comment on a pull request whose number the event does not say)',
    );
    expect((await eventTrust({ ...env('issue_comment', payload), GITHUB_TOKEN: '' })).trust?.why).toBe(
      'an issue_comment on a pull request GitHub did not say (no GITHUB_TOKEN to ask GitHub with)',
    );
  });

  it('a workflow_run told its pull request (CONCLAVE_PULL_REQUEST) takes it only when its head is the commit the run ran', async () => {
    gitHub.people.headRepo = 'mallory/widgets';
    const run = (head_sha: string, head_branch = 'feature') => ({
      workflow_run: { head_sha, head_branch, head_repository: { full_name: 'mallory/widgets' } },
      repository: { full_name: REPO },
    });
    const taken = await eventTrust(env('workflow_run', run(HEAD), { CONCLAVE_PULL_REQUEST: String(PULL) }));
    expect(taken).toMatchObject({ head: HEAD, pull: PULL, trust: { untrusted: true, why: 'a workflow_run of a run of the fork mallory/widgets' } });
    expect(taken.event).toEqual({ event_name: 'workflow_run', title: 'A title', body: 'A body', comment: '', author: 'maya' });
    await expect(eventTrust(env('workflow_run', run('c'.repeat(40)), { CONCLAVE_PULL_REQUEST: String(PULL) }))).rejects.toThrow(
      /^pull request #7 has moved on to bbbbbbbbbbbb since the run this job follows \(mallory\/widgets@cccccccccccc\)/,
    );
    await expect(eventTrust(env('workflow_run', run('c'.repeat(40), 'main'), { CONCLAVE_PULL_REQUEST: String(PULL) }))).rejects.toThrow(
      /^pull request #7 is not the one the followed run ran: its head is mallory\/widgets@bbbbbbbbbbbb, the run ran mallory\/widgets@cccccccccccc/,
    );
    await expect(eventTrust(env('workflow_run', run(HEAD), { CONCLAVE_PULL_REQUEST: '7; rm' }))).rejects.toThrow(
      'pull-request must be a pull request\'s number; found "7; rm"',
    );
    await expect(eventTrust(env('pull_request', { pull_request: pull({ full_name: REPO }) }, { CONCLAVE_PULL_REQUEST: '7' }))).rejects.toBeInstanceOf(
      UsageError,
    );
    gitHub.people.head = undefined;
    await expect(eventTrust(env('workflow_run', run(HEAD), { CONCLAVE_PULL_REQUEST: '7' }))).rejects.toThrow(`pull request #7 was not found in ${REPO}`);
  });
});
