import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic, type Reply } from '../fake-anthropic/server.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/server.js';
import { conclave } from '../helpers/cli.js';
import { HEAD, PULL, pullRequestJob, REPOSITORY } from '../helpers/pull-request-job.js';
import { runWorkflow, TEST_API_KEY, type WorkflowRun } from '../helpers/run-workflow.js';

/**
 * Votes from people (issue 53; docs/github-action.md: votes from people): a lead proposes to a
 * person, the run parks, and `conclave resume --vote` records the person's vote once GitHub (the
 * fake in test/fake-github) says the person may cast it; every refusal leaves the session as it was.
 */
const MOVED = '2222222222222222222222222222222222222222';
const TOKEN = 'ghs_test_0123456789';

const WORKFLOW = (deadline = '24h') => `
name: verdict
people: { voters: ["@octocat", "@acme/maintainers"], deadline: ${deadline} }
agents:
  lead: { role: manager }
  reviewer: { role: worker }
kickoff: Decide whether the change goes in.
outputs:
  verdict: $<< proposals.verdict.winner >>
  outcome: $<< proposals.verdict.status >>
`;

const propose = (voters: string[]): Reply => ({
  tools: [{ name: 'propose', input: { id: 'verdict', question: 'Merge the change?', options: ['approve', 'reject'], voters } }],
});
const quiet: Reply = { text: '' };

let anthropic: FakeAnthropic | undefined;
let github: FakeGitHub | undefined;
afterEach(async () => {
  await anthropic?.close();
  await github?.close();
  anthropic = github = undefined;
});

/** The environment of a job on pull request 7 of octo/widgets, with the fake GitHub. */
const jobEnv = (dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => pullRequestJob(dir, github!.url, TOKEN, extra);

/** A lead that proposes `verdict` to `voters`, then (after the vote) reads the outcome and ends. */
async function parkedRun(voters = ['@octocat'], deadline?: string): Promise<{ run: WorkflowRun; session: string; digest: string }> {
  anthropic = await startFakeAnthropic({ lead: [propose(voters), { text: 'Waiting for the vote.' }, { text: 'The verdict is in.' }, quiet], reviewer: [] });
  github = await startFakeGitHub(REPOSITORY, PULL);
  github.people.head = HEAD;
  github.people.permissions = { octocat: 'write', reader: 'read', alice: 'admin' };
  github.people.teams = { 'acme/maintainers': ['alice'] };
  const dir = mkdtempSync(join(tmpdir(), 'conclave-people-'));
  const run = await runWorkflow(anthropic, WORKFLOW(deadline), ['--park'], { dir, env: jobEnv(dir) });
  const session = join(run.dir, run.json.session as string);
  const waiting = run.json.waiting_for as { proposal: string; voters: string[]; ballot: { digest: string; commands: Record<string, string> } }[];
  return { run, session, digest: waiting?.[0]?.ballot.digest ?? '' };
}

function resume(run: WorkflowRun, session: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return conclave(['resume', session, '--json', ...args], {
    cwd: run.dir,
    env: { ANTHROPIC_BASE_URL: anthropic!.url, ANTHROPIC_API_KEY: TEST_API_KEY, ...jobEnv(run.dir), ...env },
  });
}

const json = (stdout: string) => JSON.parse(stdout) as { status: string; exit_code: number; reason: string; outputs: Record<string, string> };

describe('votes from people', () => {
  it('parks for a person, shows the ballot, and a checked vote decides the proposal with no model call repeated', async () => {
    const { run, session, digest } = await parkedRun();
    expect(run.code, run.stderr).toBe(75);
    expect(run.json.status).toBe('waiting');
    expect(run.json.reason).toBe('parked: waiting for a vote from @octocat on proposal "verdict"');
    expect(digest).toMatch(/^[0-9a-f]{12}$/);
    const [waiting] = run.json.waiting_for as { proposal: string; voters: string[]; ballot: Record<string, unknown> }[];
    expect(waiting).toMatchObject({
      proposal: 'verdict',
      voters: ['@octocat'],
      ballot: {
        question: 'Merge the change?',
        options: ['approve', 'reject'],
        proposer: 'lead',
        commands: { approve: `/conclave vote verdict approve ${digest}`, reject: `/conclave vote verdict reject ${digest}` },
      },
    });
    // The job summary holds the ballot, its commands and digest.
    const summary = readFileSync(join(run.dir, 'summary.md'), 'utf8');
    expect(summary).toContain(`/conclave vote verdict approve ${digest}`);
    expect(summary).toContain('Merge the change?');
    // conclave show says whom the run waits for, and how to vote, as text and as Markdown.
    const shown = await conclave(['show', session], { cwd: run.dir });
    expect(shown.stdout).toContain('Waiting for a vote from @octocat on verdict');
    expect(shown.stdout).toContain(`    /conclave vote verdict reject ${digest}`);
    const markdown = await conclave(['show', session, '--format', 'markdown'], { cwd: run.dir });
    expect(markdown.stdout).toContain('## 🗳️ Waiting for a vote: verdict');
    const callsBefore = anthropic!.of('lead').length;
    expect(callsBefore).toBe(2);

    const voted = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest, '--reason', 'tests pass']);
    expect(voted.code, voted.stderr).toBe(0);
    expect(json(voted.stdout).outputs).toEqual({ verdict: 'approve', outcome: 'decided' });
    // Only the lead's turn after the vote called the model: nothing recorded was asked again.
    expect(anthropic!.of('lead').length).toBe(callsBefore + 1);
    expect(lastUserText(anthropic!.of('lead').at(-1)!)).toContain('Proposal "verdict" is decided: "approve"');
    const events = readFileSync(session, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l));
    const human = events.find((e) => e.type === 'human_vote');
    expect(human).toMatchObject({
      proposal: 'verdict',
      seat: '@octocat',
      voter: 'octocat',
      option: 'approve',
      reason: 'tests pass',
      digest,
      permission: 'write',
      comment: null,
    });
    expect(events[events.indexOf(human) + 1]).toMatchObject({ type: 'vote', voter: '@octocat', option: 'approve' });
    // The permission was asked of GitHub with the job's token.
    expect(github!.requests.some((r) => r.path === `/repos/${REPOSITORY}/collaborators/octocat/permission` && r.authorization === `Bearer ${TOKEN}`)).toBe(
      true,
    );

    // Who voted, with the permission GitHub said: in show, as text and as Markdown.
    const after = await conclave(['show', session], { cwd: run.dir });
    expect(after.stdout).toContain('    @octocat (write): approve — tests pass');
    const afterMarkdown = await conclave(['show', session, '--format', 'markdown'], { cwd: run.dir });
    expect(afterMarkdown.stdout).toContain('@octocat (write): approve (tests pass)');

    // A replay of the finished session needs neither GitHub nor the API.
    const asked = github!.requests.length;
    await github!.close();
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], {
      cwd: run.dir,
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', GITHUB_API_URL: 'http://127.0.0.1:9' },
    });
    expect(replay.code, replay.stderr).toBe(0);
    expect(json(replay.stdout).outputs).toEqual({ verdict: 'approve', outcome: 'decided' });
    expect(github!.requests.length).toBe(asked);
    github = undefined;
  });

  it('refuses a vote it cannot vouch for, with exit 2, one sentence, and the session byte for byte as it was', async () => {
    const { run, session, digest } = await parkedRun(['@octocat', '@acme/maintainers']);
    expect(run.code, run.stderr).toBe(75);
    const before = readFileSync(session);
    const vote = (voter: string, d = digest) => ['--vote', 'verdict=approve', '--voter', voter, '--digest', d];
    const refusals: [string, string[], RegExp, (() => void)?][] = [
      ['a wrong digest', vote('octocat', '000000000000'), /digest 000000000000 is not that of proposal "verdict" as this run shows it/],
      [
        'a voter with read permission',
        vote('octocat'),
        /@octocat has read permission on octo\/widgets; a vote needs write/,
        () => (github!.people.permissions.octocat = 'read'),
      ],
      ['a voter not named', vote('mallory'), /@mallory is not an active member of @acme\/maintainers, and the proposal names @mallory in no other way/],
      ['a team voter not in the team', vote('bob'), /@bob is not an active member of @acme\/maintainers/, () => (github!.people.permissions.bob = 'write')],
      [
        'a team voter invited, not yet a member',
        vote('carol'),
        /@carol is not an active member of @acme\/maintainers/,
        () => ((github!.people.permissions.carol = 'write'), (github!.people.pending = { 'acme/maintainers': ['carol'] })),
      ],
      ['GitHub answering 500', vote('octocat'), /GitHub answered GET .* with 500/, () => (github!.people.fail = 'error')],
    ];
    for (const [what, args, sentence, arrange] of refusals) {
      github!.people.head = HEAD;
      github!.people.fail = undefined;
      github!.people.permissions.octocat = 'write';
      arrange?.();
      const refused = await resume(run, session, args);
      expect(refused.code, what).toBe(2);
      expect(refused.stderr, what).toMatch(sentence);
      expect(refused.stderr, what).toMatch(/^conclave: vote refused, nothing recorded: [^\n]+\n$/);
      expect(readFileSync(session).equals(before), what).toBe(true);
    }
    // GitHub that never answers: refused after the 10 s the check waits, still nothing recorded.
    github!.people.fail = 'silent';
    const started = Date.now();
    const silent = await resume(run, session, vote('octocat'));
    expect(silent.code).toBe(2);
    expect(silent.stderr).toMatch(/no answer in 10 s\): a vote GitHub cannot vouch for is refused/);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(readFileSync(session).equals(before)).toBe(true);

    // A member of the team fills the team's seat; the same person cannot vote twice.
    github!.people.fail = undefined;
    const alice = await resume(run, session, ['--vote', 'verdict=reject', '--voter', 'alice', '--digest', digest]);
    expect(alice.code, alice.stderr).toBe(75);
    expect(json(alice.stdout).reason).toBe('parked: waiting for a vote from @octocat on proposal "verdict"');
    const afterAlice = readFileSync(session);
    const again = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'alice', '--digest', digest]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/@alice has voted on proposal "verdict" already/);
    expect(readFileSync(session).equals(afterAlice)).toBe(true);
  }, 60_000);

  it('a vote after the pull request moved on is refused, and the run closes as stale: nothing paid, never resumed again, no ballot left', async () => {
    const { run, session, digest } = await parkedRun();
    expect(run.code, run.stderr).toBe(75);
    const calls = anthropic!.requests.length;
    github!.people.head = MOVED;
    const refused = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^conclave: vote refused, nothing recorded: the run is stale: it reviewed 111111111111, and pull request #7's head is 222222222222 now; .*this run is now closed as stale\n$/,
    );
    const events = readFileSync(session, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'human_vote')).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      type: 'run_ended',
      status: 'stale',
      exit_code: 0,
      reason:
        'pull request #7 moved on to 222222222222 since this run reviewed 111111111111: the run is closed without a decision, and the run for 222222222222 has its own ballot',
    });
    expect(anthropic!.requests.length).toBe(calls);
    // Over: a resume (with or without a vote) refuses it, and show offers no ballot.
    const again = await resume(run, session, []);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/records a run that already ended \(stale: pull request #7 moved on/);
    const shown = await conclave(['show', session], { cwd: run.dir });
    expect(shown.stdout).not.toContain('/conclave vote');
    expect(anthropic!.requests.length).toBe(calls);
  });

  it("a stranger's vote on a team's seat after a push is refused for who they are, and the run is not closed; a member's closes it as stale", async () => {
    const { run, session, digest } = await parkedRun(['@acme/maintainers']);
    expect(run.code, run.stderr).toBe(75);
    github!.people.head = MOVED;
    const before = readFileSync(session, 'utf8');
    const stranger = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'mallory', '--digest', digest]);
    expect(stranger.code).toBe(2);
    expect(stranger.stderr).toContain('@mallory is not an active member of @acme/maintainers');
    expect(readFileSync(session, 'utf8')).toBe(before);
    const member = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'alice', '--digest', digest]);
    expect(member.code).toBe(2);
    expect(member.stderr).toContain('the run is stale');
    expect(JSON.parse(readFileSync(session, 'utf8').trim().split('\n').at(-1)!)).toMatchObject({ type: 'run_ended', status: 'stale' });
  });

  it('a run started by a comment on the pull request binds its ballot to the head GitHub said: after a push, the old ballot is stale', async () => {
    anthropic = await startFakeAnthropic({ lead: [propose(['@octocat']), { text: 'Waiting.' }, quiet], reviewer: [] });
    github = await startFakeGitHub(REPOSITORY, PULL);
    github.people.head = HEAD;
    github.people.permissions = { octocat: 'write' };
    github.people.pullAuthor = 'octocat';
    const dir = mkdtempSync(join(tmpdir(), 'conclave-people-comment-'));
    const event = join(dir, 'comment-event.json');
    writeFileSync(
      event,
      JSON.stringify({
        action: 'created',
        issue: {
          number: PULL,
          title: 'Change',
          body: '',
          user: { login: 'octocat' },
          pull_request: { url: `https://api.github.com/repos/${REPOSITORY}/pulls/${PULL}` },
        },
        comment: { id: 5, body: '/conclave review', user: { login: 'octocat' } },
      }),
    );
    const run = await runWorkflow(anthropic, WORKFLOW(), ['--park'], {
      dir,
      env: jobEnv(dir, { GITHUB_EVENT_NAME: 'issue_comment', GITHUB_EVENT_PATH: event }),
    });
    expect(run.code, run.stderr).toBe(75);
    const session = join(run.dir, run.json.session as string);
    expect(JSON.parse(readFileSync(session, 'utf8').split('\n')[0]!).github).toMatchObject({ pull_request: PULL, head: HEAD });
    const digest = (run.json.waiting_for as { ballot: { digest: string } }[])[0]!.ballot.digest;
    const before = readFileSync(session);
    github.people.head = MOVED;
    const refused = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/the run is stale: it reviewed 111111111111, and pull request #7's head is 222222222222 now/);
    // Nothing recorded but the run's end, as stale.
    const added = readFileSync(session).subarray(before.length).toString('utf8').trim().split('\n');
    expect(added.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ type: 'run_ended', status: 'stale' })]);
  });

  it('a replay of a run parked for people parks as the run did, at once: it has no one to wait for', async () => {
    const { run, session } = await parkedRun();
    expect(run.code, run.stderr).toBe(75);
    const started = Date.now();
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(replay.code, replay.stderr).toBe(75);
    expect(json(replay.stdout).reason).toBe('parked: waiting for a vote from @octocat on proposal "verdict"');
    // The deadline is 24 hours away: a replay that waited in process would be stopped by the test's timeout instead.
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);

  it('a session holding one human_vote twice: resume and --replay stop with one sentence, --json on stdout, no stack and no lock left', async () => {
    const { run, session, digest } = await parkedRun();
    expect(run.code, run.stderr).toBe(75);
    const voted = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest]);
    expect(voted.code, voted.stderr).toBe(0);
    const lines = readFileSync(session, 'utf8').trimEnd().split('\n');
    const at = lines.findIndex((l) => l.includes('"type":"human_vote"'));
    const doubled = join(run.dir, 'doubled.jsonl');
    // The vote again right after it, every later event's seq one on.
    const later = (l: string) => l.replace(/"seq":(\d+)/, (_, n) => `"seq":${Number(n) + 1}`);
    writeFileSync(doubled, `${[...lines.slice(0, at + 1), ...lines.slice(at).map(later)].join('\n')}\n`);
    // Resumed where it stopped right after the second copy (a run that has not ended).
    const cut = join(run.dir, 'doubled-cut.jsonl');
    writeFileSync(cut, `${[...lines.slice(0, at + 1), later(lines[at]!)].join('\n')}\n`);
    for (const [args, file] of [
      [['run', 'workflow.yml', '--replay', doubled, '--json'], doubled],
      [['resume', cut, '--json'], cut],
    ] as const) {
      const r = await conclave(args, { cwd: run.dir, env: { ...jobEnv(run.dir), ANTHROPIC_BASE_URL: anthropic!.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
      expect(r.stderr, args[0]).not.toMatch(/\n\s+at |Unhandled|TypeError|ChannelError/);
      expect([1, 2], `${args[0]}: ${r.stderr}`).toContain(r.code);
      expect(`${r.stdout}\n${r.stderr.slice(-600)}`, args[0]).toMatch(/differs from the session at event #\d+ \(human_vote\)/);
      if (r.code === 1) expect(JSON.parse(r.stdout)).toMatchObject({ status: 'error' });
      expect(existsSync(`${file}.lock`), args[0]).toBe(false);
    }
  });

  it("people.decide: whoever the lead names, the people decide; the agents' vote is advice; the run parks and cannot end in success until they vote", async () => {
    const complete = { name: 'complete', input: { status: 'success', summary: 'approved' } };
    anthropic = await startFakeAnthropic({
      lead: [propose(['reviewer']), { tools: [complete] }, { text: 'Waiting for the people.' }, { tools: [complete] }, quiet],
      reviewer: [{ tools: [{ name: 'vote', input: { proposal: 'verdict', option: 'approve', reason: 'looks fine to me' } }] }, quiet, quiet],
    });
    github = await startFakeGitHub(REPOSITORY, PULL);
    github.people.head = HEAD;
    github.people.permissions = { octocat: 'write' };
    const dir = mkdtempSync(join(tmpdir(), 'conclave-people-decide-'));
    const workflow = WORKFLOW().replace(
      'people: { voters: ["@octocat", "@acme/maintainers"], deadline: 24h }',
      'people: { voters: ["@octocat"], decide: [verdict] }',
    );
    const run = await runWorkflow(anthropic, `${workflow}  decided_by: $<< proposals.verdict.decided_by >>\n`, ['--park'], { dir, env: jobEnv(dir) });
    expect(run.code, run.stderr).toBe(75);
    expect(run.json.reason).toBe('parked: waiting for a vote from @octocat on proposal "verdict"');
    // The lead named only @reviewer: the people are the voters; the reviewer's approve is advice, and closed nothing.
    const opened = run.events.find((e) => e.type === 'proposal_opened')!.proposal as { voters: string[]; advisers: string[] };
    expect(opened).toMatchObject({ voters: ['@octocat'], advisers: ['reviewer'] });
    expect(run.events.filter((e) => e.type === 'proposal_closed')).toEqual([]);
    // The lead's success was refused while the people's decision was open.
    const refused = run.events.find((e) => e.type === 'tool_result' && e.tool === 'complete')!;
    expect(refused).toMatchObject({ is_error: true });
    expect(refused.content).toContain('proposal "verdict" is the people\'s to decide (people.decide) and still open');
    // The lead's first request names the people and the decisions that are theirs.
    const system = JSON.stringify(anthropic.of('lead')[0]!.body.system);
    expect(system).toContain('People vote too, from GitHub, not in this channel: @octocat.');
    expect(system).toContain('Decisions that are the people\'s: the proposals with the id \\"verdict\\"');
    // The ballot shows the agents' vote as advice.
    const summary = readFileSync(join(run.dir, 'summary.md'), 'utf8');
    expect(summary).toContain("The team's advice (this decision is yours: the agents' votes decide nothing):");
    expect(summary).toContain('- reviewer: `approve` — looks fine to me');
    // The people's vote decides it, against the agents' advice.
    const session = join(run.dir, run.json.session as string);
    const digest = (run.json.waiting_for as { ballot: { digest: string } }[])[0]!.ballot.digest;
    const voted = await resume(run, session, ['--vote', 'verdict=reject', '--voter', 'octocat', '--digest', digest]);
    expect(voted.code, voted.stderr).toBe(0);
    expect(json(voted.stdout).outputs).toEqual({ verdict: 'reject', outcome: 'decided', decided_by: 'people' });
    const shown = await conclave(['show', session], { cwd: run.dir });
    expect(shown.stdout).toContain('@octocat (write): reject');
    expect(shown.stdout).toContain('@reviewer (advice): approve — looks fine to me');
    // It parked for people, not for a batch.
    expect(shown.stdout).toMatch(/ {2}Parked 1 time, \d+\.\d s between its processes/);
    expect(shown.stdout).not.toContain('Message batches');
    const replay = await conclave(['run', 'workflow.yml', '--replay', session, '--json'], { cwd: run.dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(replay.code, replay.stderr).toBe(0);
    expect(json(replay.stdout).outputs).toMatchObject({ verdict: 'reject', decided_by: 'people' });
  });

  it('validate warns when no proposal has to reach the people; a mention of a person reaches no one and draws no notice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-people-validate-'));
    const team = 'agents:\n  lead: { role: manager }\n  reviewer: { role: worker }\nkickoff: Decide.\n';
    writeFileSync(join(dir, 'none.yml'), `name: none\npeople: { voters: ["@octocat"] }\n${team}`);
    writeFileSync(join(dir, 'decide.yml'), `name: decide\npeople: { voters: ["@octocat"], decide: [verdict] }\n${team}`);
    const none = await conclave(['validate', 'none.yml'], { cwd: dir });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout + none.stderr).toMatch(/none\.yml:2:1: warning: people names @octocat, but no proposal has to reach them: no people\.decide/);
    const decide = await conclave(['validate', 'decide.yml'], { cwd: dir });
    expect(decide.stdout + decide.stderr).not.toContain('warning');
    anthropic = await startFakeAnthropic({ lead: [{ text: 'Asked @octocat and @acme/maintainers.' }, quiet], reviewer: [] });
    const mention = `name: mention\npeople: { voters: ["@octocat", "@acme/maintainers"], decide: [verdict] }\n${team}`;
    const run = await runWorkflow(anthropic, mention, [], { dir: mkdtempSync(join(tmpdir(), 'conclave-people-mention-')) });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.events.filter((e) => e.type === 'message' && (e.message as { kind: string }).kind === 'system')).toEqual([]);
    expect(anthropic.of('lead')).toHaveLength(1);
  });

  it('a vote is for one run: the ballot of a newer run on the same pull request decides nothing in an older one', async () => {
    const older = await parkedRun();
    expect(older.run.code, older.run.stderr).toBe(75);
    await anthropic!.close();
    await github!.close();
    const newer = await parkedRun();
    expect(newer.run.code, newer.run.stderr).toBe(75);
    // Same proposal, same head: only the run differs, and so do the digests.
    expect(newer.digest).not.toBe(older.digest);
    const before = readFileSync(older.session);
    const crossed = await resume(older.run, older.session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', newer.digest]);
    expect(crossed.code, crossed.stderr).toBe(2);
    expect(crossed.stderr).toMatch(/the digest [0-9a-f]{12} is not that of proposal "verdict" as this run shows it: the ballot is stale, or another run's/);
    expect(readFileSync(older.session).equals(before)).toBe(true);
    const own = await resume(newer.run, newer.session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', newer.digest]);
    expect(own.code, own.stderr).toBe(0);
  });

  it('a copy of the session made before a resume is stale once the run went on: resuming it is refused, nothing paid', async () => {
    const { run, session, digest } = await parkedRun();
    expect(run.code, run.stderr).toBe(75);
    const copy = join(run.dir, 'copy-before-the-vote.jsonl');
    writeFileSync(copy, readFileSync(session));
    const voted = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest]);
    expect(voted.code, voted.stderr).toBe(0);
    const calls = anthropic!.requests.length;
    const stale = await resume(run, copy, []);
    expect(stale.code, stale.stderr).toBe(2);
    expect(stale.stderr).toMatch(/copy-before-the-vote\.jsonl is generation 1 of run \S+, and generation 2 \(idle\) was written since/);
    expect(anthropic!.requests.length).toBe(calls);
  });

  it('--from-comment refuses an edited comment, one older than the proposal, and one on another pull request', async () => {
    const { run, session, digest } = await parkedRun();
    expect(run.code, run.stderr).toBe(75);
    const before = readFileSync(session);
    const eventFile = join(run.dir, 'comment.json');
    const fromComment = async (comment: object, issue = PULL) => {
      writeFileSync(
        eventFile,
        JSON.stringify({ action: 'created', issue: { number: issue, pull_request: {} }, comment, repository: { full_name: REPOSITORY } }),
      );
      return resume(run, session, ['--from-comment'], { GITHUB_EVENT_NAME: 'issue_comment', GITHUB_EVENT_PATH: eventFile });
    };
    const body = `/conclave vote verdict approve ${digest} because tests pass`;
    // Edited on GitHub after the event was sent: GitHub's copy differs.
    const edited = github!.comment(body, 'octocat');
    const sent = { ...edited };
    edited.body = `/conclave vote verdict reject ${digest}`;
    edited.updated_at = new Date(Date.now() + 5000).toISOString();
    const cases: [string, object, number, RegExp][] = [
      ['edited after the event', sent, PULL, /the comment was edited after it was made \(its text on GitHub differs from the event\)/],
      [
        'older than the proposal',
        { ...github!.comment(body, 'octocat'), created_at: '2020-01-01T00:00:00Z', updated_at: '2020-01-01T00:00:00Z' },
        PULL,
        /older than proposal "verdict"/,
      ],
      ['on another pull request', github!.comment(body, 'octocat'), 8, /the comment is on #8, and the run is on pull request #7/],
      ['an event of an edit', { ...github!.comment(body, 'octocat'), updated_at: new Date(Date.now() + 1000).toISOString() }, PULL, /edited after it was made/],
    ];
    for (const [what, comment, issue, sentence] of cases) {
      const refused = await fromComment(comment, issue);
      expect(refused.code, `${what}: ${refused.stderr}`).toBe(2);
      expect(refused.stderr, what).toMatch(sentence);
      expect(readFileSync(session).equals(before), what).toBe(true);
    }
    const voted = await fromComment(github!.comment(body, 'octocat'));
    expect(voted.code, voted.stderr).toBe(0);
    expect(json(voted.stdout).outputs.verdict).toBe('approve');
  });

  it('refuses a vote cast after people.deadline, and closes the proposal by its rule on resume', async () => {
    const { run, session, digest } = await parkedRun(['@octocat'], '1s');
    expect(run.code, run.stderr).toBe(75);
    await new Promise((r) => setTimeout(r, 1200));
    const before = readFileSync(session);
    const late = await resume(run, session, ['--vote', 'verdict=approve', '--voter', 'octocat', '--digest', digest]);
    expect(late.code, late.stderr).toBe(2);
    expect(late.stderr).toMatch(/vote refused, nothing recorded: the vote came after proposal "verdict"'s deadline \(\d{4}-\d\d-\d\dT[^)]+\)/);
    expect(readFileSync(session).equals(before)).toBe(true);
    const resumed = await resume(run, session, []);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(json(resumed.stdout).outputs.outcome).toBe('no_decision');
    expect(lastUserText(anthropic!.of('lead').at(-1)!)).toContain('Proposal "verdict" ended with no decision: no votes were cast');
  });

  it('without --park waits in process for the deadline, saying for whom', async () => {
    anthropic = await startFakeAnthropic({ lead: [propose(['@octocat']), { text: 'Waiting.' }, quiet, quiet], reviewer: [] });
    github = await startFakeGitHub(REPOSITORY, PULL);
    const dir = mkdtempSync(join(tmpdir(), 'conclave-people-'));
    const run = await runWorkflow(anthropic, WORKFLOW('2s'), [], { dir, env: jobEnv(dir, { GITHUB_ACTIONS: '' }) });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/waiting for a vote from @octocat on verdict\n/);
    expect(run.json.outputs.outcome).toBe('no_decision');
  });

  it('lets an agent name only the people the workflow names', async () => {
    anthropic = await startFakeAnthropic({ lead: [propose(['@mallory']), quiet, quiet], reviewer: [] });
    github = await startFakeGitHub(REPOSITORY, PULL);
    const run = await runWorkflow(anthropic, WORKFLOW(), ['--park']);
    // No proposal opened, so none waits: the run ends idle (its outputs, which name the proposal, cannot be evaluated).
    expect(run.json.reason, run.stderr).toMatch(/^ended idle/);
    const result = anthropic.of('lead')[1]!.body.messages.at(-1)!.content as { is_error?: boolean; content: string }[];
    expect(result[0]).toMatchObject({
      is_error: true,
      content: 'voter "@mallory" is not among the people this workflow names (people.voters: @octocat, @acme/maintainers); an agent cannot add people',
    });
  });
});
