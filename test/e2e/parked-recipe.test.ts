import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { BOT_LOGIN, startFakeGitHub, type FakeGitHub } from '../fake-github/server.js';
import { REVIEW, reviewScript } from '../fixtures/review-team.js';
import { ROOT } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The parked-review recipe of docs/github-action.md (examples/github/), job by job as GitHub runs
 * it: each conclave step through GitHub's @github/local-action with the event file GitHub sends
 * (a pull request's, then the schedule's), and the artifact actions played by the test against
 * the fake GitHub API: upload-artifact adds an artifact of that workflow run, download-artifact
 * writes its file into the step's `path`, checkout gives a workspace at the commit.
 */
type Step = { id?: string; if?: string; uses?: string; with?: Record<string, string | boolean> };
type Job = { steps: Step[] };
const recipe = (file: string) => parse(readFileSync(join(ROOT, 'examples/github', file), 'utf8')) as { jobs: Record<string, Job> };
const REVIEW_JOB = recipe('review-parked.yml').jobs.review!;
const { parked: LIST_JOB, resume: RESUME_JOB } = recipe('resume-parked.yml').jobs as { parked: Job; resume: Job };

const REPOSITORY = 'octo/widgets';
const PULL = 7;
const COMMIT = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
const TOKEN = 'ghs_test_0123456789';

let anthropic: FakeAnthropic | undefined;
let gitHub: FakeGitHub | undefined;
afterEach(async () => {
  await anthropic?.close();
  await gitHub?.close();
  anthropic = gitHub = undefined;
});

/** `${{ a.b.c }}` in a step's `with:`, from the job's context; an expression the test does not know fails it. */
function inputsOf(step: Step, context: Record<string, unknown>): Record<string, string> {
  const value = (path: string): string => {
    const found = path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], context);
    if (found === undefined) throw new Error(`the test has no value for \${{ ${path} }}`);
    return String(found);
  };
  return Object.fromEntries(
    Object.entries(step.with ?? {}).map(([name, v]) => [name, String(v).replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, path: string) => value(path))]),
  );
}

/** The conclave step of a job, run by local-action in `workspace` as workflow run `runId` of event `event`. */
async function conclaveStep(step: Step, context: Record<string, unknown>, workspace: string, runId: number, event: { name: string; payload: unknown }) {
  // action.yml's default github-token, `${{ github.token }}`, as GitHub gives it: the job's token.
  const inputs = { 'github-token': TOKEN, ...inputsOf(step, context) };
  const eventFile = join(workspace, '..', `event-${runId}.json`);
  writeFileSync(eventFile, JSON.stringify(event.payload));
  const dotenv = join(workspace, '..', `env-${runId}-${step.id}`);
  writeFileSync(
    dotenv,
    `${Object.entries(inputs)
      .map(([name, v]) => `INPUT_${name.toUpperCase()}=${v}`)
      .join('\n')}\nGITHUB_WORKSPACE=${workspace}\n`,
  );
  const env = {
    ...process.env,
    GITHUB_ACTIONS: '',
    GITHUB_OUTPUT: '',
    GITHUB_STEP_SUMMARY: '',
    GITHUB_EVENT_NAME: event.name,
    GITHUB_EVENT_PATH: eventFile,
    GITHUB_REPOSITORY: REPOSITORY,
    GITHUB_SHA: COMMIT,
    GITHUB_RUN_ID: String(runId),
    GITHUB_API_URL: gitHub!.url,
    GITHUB_GRAPHQL_URL: `${gitHub!.url}/graphql`,
    ANTHROPIC_BASE_URL: anthropic!.url,
  };
  const result = await new Promise<{ code: number; stdout: string }>((done) =>
    execFile(
      join(ROOT, 'node_modules/.bin/local-action'),
      ['run', '.', 'src/cli/action-main.ts', dotenv],
      { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024 },
      (e, stdout) => done({ code: e ? Number(e.code ?? 1) : 0, stdout }),
    ),
  );
  const table = result.stdout.slice(result.stdout.lastIndexOf('Action Outputs'));
  const outputs = Object.fromEntries([...table.matchAll(/│\s*'([\w-]+)'\s*│\s*'(.*?)'\s*│/g)].map((m) => [m[1]!, m[2]!.replace(/\\'/g, "'")]));
  return { ...result, outputs };
}

/** upload-artifact: the session file as an artifact of workflow run `runId`. */
function upload(step: Step, context: Record<string, unknown>, workspace: string, runId: number): void {
  const { name, path } = inputsOf(step, context);
  gitHub!.artifacts.push({
    id: gitHub!.artifacts.length + 1,
    name: name!,
    workflowRun: runId,
    headSha: COMMIT,
    createdAt: new Date().toISOString(),
    expired: false,
    files: { [basename(path!)]: readFileSync(join(workspace, path!), 'utf8') },
  });
}

/** checkout (a workspace with the repository at the commit) and download-artifact (the artifact's files into `path`). */
function checkoutAndDownload(repository: string, job: Job, context: Record<string, unknown>): string {
  const workspace = join(mkdtempSync(join(tmpdir(), 'conclave-recipe-')), 'repo');
  cpSync(repository, workspace, { recursive: true });
  const download = job.steps.find((s) => s.uses?.startsWith('actions/download-artifact'))!;
  const { name, path, 'run-id': runId } = inputsOf(download, context);
  const artifact = gitHub!.artifacts.find((a) => a.name === name && String(a.workflowRun) === runId)!;
  mkdirSync(join(workspace, path!), { recursive: true });
  for (const [file, text] of Object.entries(artifact.files)) writeFileSync(join(workspace, path!, file), text);
  return workspace;
}

const conclaveOf = (job: Job) => job.steps.find((s) => s.id === 'conclave' || s.id === 'list')!;
const uploadOf = (job: Job) => job.steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
const PULL_EVENT = { name: 'pull_request', payload: { action: 'opened', number: PULL, pull_request: { number: PULL, head: { sha: COMMIT } } } };
const SCHEDULE_EVENT = { name: 'schedule', payload: { schedule: '*/15 * * * *' } };

describe('the parked-review recipe (examples/github), through local-action', () => {
  it('docs/github-action.md shows the two workflows as they are in examples/github', () => {
    const docs = readFileSync(join(ROOT, 'docs/github-action.md'), 'utf8');
    for (const file of ['review-parked.yml', 'resume-parked.yml'])
      expect(docs).toContain(`\`\`\`yaml\n${readFileSync(join(ROOT, 'examples/github', file), 'utf8')}\`\`\``);
  });

  it('a pull request parks the review; scheduled jobs resume the newest copy until it ends; a stale copy is refused; an ended run is done', async () => {
    anthropic = await startFakeAnthropic(reviewScript(2), { batches: { endsAfterMs: 1_500 } });
    gitHub = await startFakeGitHub(REPOSITORY, PULL);
    // The repository as checked out: the conclave workflow where the recipe names it.
    const repository = join(mkdtempSync(join(tmpdir(), 'conclave-recipe-')), 'repo');
    mkdirSync(join(repository, '.github', 'conclave'), { recursive: true });
    writeFileSync(join(repository, '.github', 'conclave', 'review.yml'), REVIEW(true).replace('[1, 2, 3, 4, 5, 6, 7, 8]', '[1, 2]'));
    const secrets = { ANTHROPIC_API_KEY: TEST_API_KEY };

    // The pull request's job: parked, its session published.
    const prWorkspace = join(mkdtempSync(join(tmpdir(), 'conclave-recipe-')), 'repo');
    cpSync(repository, prWorkspace, { recursive: true });
    const started = await conclaveStep(conclaveOf(REVIEW_JOB), { secrets }, prWorkspace, 1001, PULL_EVENT);
    expect(started.code, started.stdout.slice(-3000)).toBe(0);
    expect(started.outputs.status).toBe('waiting');
    expect(started.outputs['artifact-name']).toMatch(new RegExp(`^conclave-\\d{8}T\\d{6}Z-[0-9a-f]{6}-g1-waiting-${COMMIT}$`));
    upload(uploadOf(REVIEW_JOB), { steps: { conclave: { outputs: started.outputs } } }, prWorkspace, 1001);

    // Scheduled runs: list the parked runs, resume each in a job of the matrix, publish the new copy.
    let last = started;
    const generations: string[] = [];
    for (let run = 2001; last.outputs.status === 'waiting' && run < 2010; run++) {
      await new Promise((resolve) => setTimeout(resolve, 1_600));
      const listed = await conclaveStep(conclaveOf(LIST_JOB), { github: { token: TOKEN } }, repository, run, SCHEDULE_EVENT);
      expect(listed.code, listed.stdout.slice(-3000)).toBe(0);
      const parked = JSON.parse(listed.outputs.parked!) as { artifact: string; 'run-id': number; commit: string; generation: number }[];
      expect(parked).toHaveLength(1);
      expect(parked[0]).toMatchObject({ commit: COMMIT, artifact: gitHub.artifacts.at(-1)!.name, 'run-id': gitHub.artifacts.at(-1)!.workflowRun });
      const context = { matrix: { parked: parked[0] }, github: { token: TOKEN }, secrets };
      const workspace = checkoutAndDownload(repository, RESUME_JOB, context);
      last = await conclaveStep(conclaveOf(RESUME_JOB), context, workspace, run, SCHEDULE_EVENT);
      expect(last.code, last.stdout.slice(-3000)).toBe(0);
      generations.push(last.outputs.generation!);
      upload(uploadOf(RESUME_JOB), { steps: { conclave: { outputs: last.outputs } } }, workspace, run);
    }
    expect(last.outputs.status).toBe('idle'); // the lead's last word, no complete: the run ends idle, exit 0
    expect(generations).toEqual(generations.map((_, i) => String(i + 2)));
    expect(last.outputs['artifact-name']).toMatch(new RegExp(`-g${generations.at(-1)}-idle-${COMMIT}$`));
    // The pull request's comment, kept by the first job, was brought up to date by the last.
    const mine = gitHub.comments.filter((c) => c.user.login === BOT_LOGIN);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toContain('idle');

    // Nothing is parked any more: the newest copy has ended.
    const after = await conclaveStep(conclaveOf(LIST_JOB), { github: { token: TOKEN } }, repository, 3001, SCHEDULE_EVENT);
    expect(JSON.parse(after.outputs.parked!)).toEqual([]);

    // The first, parked copy again (a re-run of an old job): refused, nothing paid.
    const calls = anthropic.requests.length;
    const stale = { matrix: { parked: { artifact: gitHub.artifacts[0]!.name, 'run-id': 1001 } }, github: { token: TOKEN }, secrets };
    const staleRun = await conclaveStep(conclaveOf(RESUME_JOB), stale, checkoutAndDownload(repository, RESUME_JOB, stale), 3002, SCHEDULE_EVENT);
    expect(staleRun.code).not.toBe(0);
    expect(staleRun.outputs).toMatchObject({ status: 'stale', 'exit-code': '2' });
    expect(staleRun.stdout).toMatch(/is generation 1 of run .*generation \d+ \(idle\) was published since/);
    expect(staleRun.outputs['artifact-name'] ?? '').toBe('');

    // The newest copy, ended: done, the step green, its outputs as recorded.
    const newest = gitHub.artifacts.at(-1)!;
    const done = { matrix: { parked: { artifact: newest.name, 'run-id': newest.workflowRun } }, github: { token: TOKEN }, secrets };
    const doneRun = await conclaveStep(conclaveOf(RESUME_JOB), done, checkoutAndDownload(repository, RESUME_JOB, done), 3003, SCHEDULE_EVENT);
    expect(doneRun.code, doneRun.stdout.slice(-3000)).toBe(0);
    expect(doneRun.outputs).toMatchObject({ status: 'already-done', 'exit-code': '0' });
    expect(doneRun.stdout).toMatch(/already ended \(idle/);
    expect(doneRun.stdout).not.toMatch(/--at|--out/);
    expect(anthropic.requests.length).toBe(calls);
  }, 180_000);
});
