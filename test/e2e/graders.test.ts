import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { GRADED_APP, GRADED_REVIEW, gradedReviewScript } from '../fixtures/graded-review.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';

/** `conclave grade` and the graders in `conclave test` and the report (docs/graders.md; issue 82). */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The graded review run live against the test server: its folder and session. */
async function recordedReview(): Promise<{ dir: string; session: string }> {
  server = await startFakeAnthropic(gradedReviewScript());
  const dir = mkdtempSync(join(tmpdir(), 'conclave-graders-'));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'app.js'), GRADED_APP);
  const github = { GITHUB_ACTIONS: 'true', GITHUB_WORKSPACE: dir, GITHUB_STEP_SUMMARY: join(dir, 'summary.md'), GITHUB_ACTION_REPOSITORY: 'owner/conclave' };
  const run = await runWorkflow(server, GRADED_REVIEW, ['--session', 'review.session.jsonl'], { dir, env: { ...github, GITHUB_ACTION_REF: 'v0' } });
  expect(run.code, run.stderr).toBe(0);
  return { dir, session: 'review.session.jsonl' };
}

type Graded = { session: string; graders: Record<string, { value: number | null; [k: string]: unknown }> };

describe('conclave grade', () => {
  it('a lead and three reviewers, two annotating the same line and grepping the same pattern: graded from the session alone, no request', async () => {
    const { dir, session } = await recordedReview();
    const requests = server!.requests.length;
    const graded = await conclave(['grade', session, '--json'], { cwd: dir, env: { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } });
    expect(graded.code, graded.stderr).toBe(0);
    expect(server!.requests.length).toBe(requests);
    const json = JSON.parse(graded.stdout) as Graded;
    expect(json.session).toBe(session);
    const g = json.graders;
    expect(g.duplicate_findings).toMatchObject({ value: 0.3333, findings: 3 });
    expect((g.duplicate_findings!.duplicates as unknown[]).length).toBe(1);
    expect(g.redundant_tool_calls!.value).toBeGreaterThanOrEqual(1);
    expect(g.redundant_tool_calls!.calls).toEqual([expect.objectContaining({ tool: 'grep', input: '{"pattern":"db.query"}' })]);
    expect(g.unanswered_mentions!.value).toBe(0);
    expect(g.work_after_complete!.value).toBe(0);
    expect(g.idle_agents!.value).toBe(0);
    expect(g.tool_errors!.value).toBe(0);
    expect(g.status!.value).toBe(1);
    expect(g.cost_per_finding!.value).toBeGreaterThan(0);
    // The saturation curve: the reviewers in the order they came in, each one's unique findings adding up to 2.
    const curve = g.marginal_findings!.curve as { agent: string; unique: number; total_unique: number }[];
    expect(curve.map((c) => c.agent).sort()).toEqual(['rev-1', 'rev-2', 'rev-3']);
    expect(curve.at(-1)!.total_unique).toBe(2);

    // Several sessions: one object each, and a total.
    const both = await conclave(['grade', session, session, '--json'], { cwd: dir });
    const total = JSON.parse(both.stdout) as { sessions: Graded[]; total: Record<string, { value: number; sessions: number }> };
    expect(total.sessions).toHaveLength(2);
    expect(total.total.duplicate_findings).toEqual({ value: 0.3333, sessions: 2 });
    expect(total.total.calls!.value).toBe(2 * (g.calls!.value as number));

    const text = await conclave(['grade', session], { cwd: dir });
    expect(text.stdout).toMatch(/\n {2}duplicate_findings +0\.3333 {2}@rev-[12]'s src\/app\.js:3 overlaps @rev-[12]'s\n/);
    expect(text.stdout).toContain('What each grader measures: docs/graders.md');

    // The Action's job summary: the team's graders in one line, linked to their definitions.
    expect(readFileSync(join(dir, 'summary.md'), 'utf8')).toMatch(
      /\n\*\*Graders\*\* \(\[what each measures\]\(https:\/\/github\.com\/owner\/conclave\/blob\/v0\/docs\/graders\.md\)\): duplicate_findings 0\.3333 · marginal_findings \d · lead_override 0 · messages_per_decision [\d.]+ · unanswered_mentions 0 · idle_agents 0 · redundant_tool_calls 1 · work_after_complete 0\n/,
    );

    const missing = await conclave(['grade', 'nope.jsonl'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^conclave: .*nope\.jsonl/);
  });

  it('a case expecting graders: a bound that does not hold fails naming the grader, its value and its bound; an unknown id is exit 2 with a did-you-mean', async () => {
    const { dir, session } = await recordedReview();
    writeFileSync(join(dir, 'workflow.yml'), GRADED_REVIEW);
    const testFile = (bound: string) =>
      `workflow: workflow.yml\ncases:\n  - name: reviews\n    session: ${session}\n    expect:\n      status: success\n      graders:\n        ${bound}\n        unanswered_mentions: 0\n`;
    writeFileSync(join(dir, 'review.test.yml'), testFile('duplicate_findings: { max: 0.2 }'));
    const failing = await conclave(['test', 'review.test.yml'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(failing.code, failing.stdout + failing.stderr).toBe(1);
    expect(failing.stdout).toMatch(
      /review\.test\.yml:8:9: reviews: graders\.duplicate_findings: grader duplicate_findings is 0\.3333, over the 0\.2 expected at most \(/,
    );
    writeFileSync(join(dir, 'review.test.yml'), testFile('duplicate_findings: { max: 0.5 }'));
    const holding = await conclave(['test', 'review.test.yml'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(holding.code, holding.stdout + holding.stderr).toBe(0);
    writeFileSync(join(dir, 'review.test.yml'), testFile('duplicate_findngs: { max: 0.5 }'));
    for (const args of [
      ['validate', 'review.test.yml'],
      ['test', 'review.test.yml'],
    ]) {
      const refused = await conclave(args, { cwd: dir });
      expect(refused.code, args[0]).toBe(2);
      expect(refused.stdout + refused.stderr).toContain('review.test.yml:8:9: unknown grader "duplicate_findngs" (did you mean "duplicate_findings"?)');
    }
  });

  it('the report of the session shows the graders: each value, what it measures, what stands behind it', async () => {
    const { dir, session } = await recordedReview();
    const report = await conclave(['report', session, '-o', 'run.html'], { cwd: dir });
    expect(report.code, report.stderr).toBe(0);
    const page = readFileSync(join(dir, 'run.html'), 'utf8');
    const section = /<section id="graders"><h2>Graders<\/h2>([\s\S]*?)<\/section>/.exec(page)?.[1] ?? '';
    expect(section).toMatch(/<code>duplicate_findings<\/code><\/th><td>0\.3333<\/td><td>the share of findings/);
    expect(section).toContain('overlaps @rev-');
    expect(section).toMatch(/<code>redundant_tool_calls<\/code><\/th><td>1<\/td>/);
  });
});
