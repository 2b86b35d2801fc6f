import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { BOT_LOGIN, startFakeGitHub } from '../fake-github/server.js';
import { REVIEW, reviewScript } from '../fixtures/review-team.js';
import {
  checkoutAndDownload,
  COMMIT,
  conclaveOf,
  conclaveStep,
  fakes,
  PULL,
  recipe,
  REPOSITORY,
  TOKEN,
  upload,
  uploadOf,
  type Job,
  closeFakes,
  PULL_EVENT,
} from '../helpers/action-recipe.js';
import { ROOT } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The parked-review recipe of docs/github-action.md (examples/github/), job by job as GitHub runs
 * it (helpers/action-recipe.ts): a pull request's job, then the schedule's.
 */
const REVIEW_JOB = recipe('review-parked.yml').jobs.review!;
const { parked: LIST_JOB, resume: RESUME_JOB } = recipe('resume-parked.yml').jobs as { parked: Job; resume: Job };

afterEach(closeFakes);

const SCHEDULE_EVENT = { name: 'schedule', payload: { schedule: '*/15 * * * *' } };

describe('the parked-review recipe (examples/github), through local-action', () => {
  it('docs/github-action.md shows the two workflows as they are in examples/github', () => {
    const docs = readFileSync(join(ROOT, 'docs/github-action.md'), 'utf8');
    for (const file of ['review-parked.yml', 'resume-parked.yml'])
      expect(docs).toContain(`\`\`\`yaml\n${readFileSync(join(ROOT, 'examples/github', file), 'utf8')}\`\`\``);
  });

  it('a pull request parks the review; scheduled jobs resume the newest copy until it ends; a stale copy is refused; an ended run is done', async () => {
    const anthropic = (fakes.anthropic = await startFakeAnthropic(reviewScript(2), { batches: { endsAfterMs: 1_500 } }));
    const gitHub = (fakes.gitHub = await startFakeGitHub(REPOSITORY, PULL));
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
    expect(started.outputs['artifact-name']).toMatch(new RegExp(`^conclave-\\d{8}T\\d{6}Z-[0-9a-f]{6}-g1-waiting-${COMMIT}-pr${PULL}$`));
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
    expect(last.outputs['artifact-name']).toMatch(new RegExp(`-g${generations.at(-1)}-idle-${COMMIT}-pr${PULL}$`));
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
    expect(staleRun.outputs).toMatchObject({ status: 'superseded', 'exit-code': '2' });
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
