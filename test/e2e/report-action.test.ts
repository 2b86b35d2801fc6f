import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { startFakeGitHub } from '../fake-github/server.js';
import { localActionStep, fakes, PULL, REPOSITORY, closeFakes, PULL_EVENT } from '../helpers/action-recipe.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/** The Action's `report: true` (docs/report.md): the run's page uploaded as an artifact, linked from the job summary and the comment. */
afterEach(closeFakes);

describe("the Action's report", () => {
  it('writes the page, uploads it as an artifact (not zipped, so that GitHub opens it), and links it from the job summary and the pull request comment', async () => {
    fakes.anthropic = await startFakeAnthropic({ lead: [{ tools: [{ name: 'complete', input: { status: 'success', summary: 'Looks good.' } }] }] });
    const gitHub = (fakes.gitHub = await startFakeGitHub(REPOSITORY, PULL));
    const workspace = join(mkdtempSync(join(tmpdir(), 'conclave-report-action-')), 'repo');
    const artifacts = join(workspace, '..', 'artifacts');
    for (const dir of [workspace, artifacts]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(workspace, 'review.yml'), 'name: review\nagents:\n  lead: { role: manager }\nkickoff: Review the change.\n');
    const summary = join(workspace, '..', 'summary.md');
    const step = { id: 'conclave', uses: './', with: { workflow: 'review.yml', comment: 'true', 'anthropic-api-key': TEST_API_KEY } };
    const result = await localActionStep(step, {}, workspace, 4242, PULL_EVENT, {
      LOCAL_ACTION_ARTIFACT_PATH: artifacts,
      LOCAL_ACTION_WORKSPACE: workspace,
      GITHUB_SERVER_URL: 'https://github.com',
      GITHUB_STEP_SUMMARY: summary,
    });
    expect(result.code, result.stdout.slice(-3000) + result.stderr.slice(-3000)).toBe(0);
    expect(result.outputs.status).toBe('success');
    const file = result.outputs['report-file']!;
    expect(file).toMatch(/^\.conclave\/sessions\/conclave-.*\.html$/);
    const page = readFileSync(join(workspace, file), 'utf8');
    expect(page).toContain('Looks good.');
    const url = result.outputs['report-url']!;
    expect(url).toMatch(/^https:\/\/github\.com\/octo\/widgets\/actions\/runs\/4242\/artifacts\/\d+$/);
    expect(readdirSync(artifacts).length).toBeGreaterThan(0);
    const written = readFileSync(summary, 'utf8');
    expect(written).toContain('## ✅ conclave: review.yml');
    expect(written).toContain(`📄 [The run's page](${url}): its timeline, spawn tree, every call, message and vote.`);
    expect(gitHub.comments).toHaveLength(1);
    expect(gitHub.comments[0]!.body).toContain(`📄 [The run's page](${url}): its timeline, spawn tree, every call, message and vote.`);
  }, 60_000);
});
