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

describe('rubric graders (graders: in the workflow)', () => {
  const RUBRIC = `${GRADED_REVIEW}graders:\n  clear:\n    rubric: Does the lead's summary name the finding and the line it is on?\n    model: claude-haiku-4-5\n`;

  it('scored live by a model and recorded; graded again by grade and by test offline with the same value and no request; its cost counted', async () => {
    const script = gradedReviewScript();
    server = await startFakeAnthropic({ ...script, '(grader)': [{ tools: [{ name: 'score', input: { score: 0.8, reason: 'it names src/app.js:3' } }] }] });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-rubric-'));
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'app.js'), GRADED_APP);
    const run = await runWorkflow(server, RUBRIC, ['--session', 'review.session.jsonl'], { dir });
    expect(run.code, run.stderr).toBe(0);
    // The scoring call: the rubric and the run's transcript, the score tool forced, on the grader's model.
    const scoring = server.of('(grader)');
    expect(scoring).toHaveLength(1);
    expect(scoring[0]!.body.model).toBe('claude-haiku-4-5');
    const asked = JSON.stringify(scoring[0]!.body.messages);
    expect(asked).toContain("Does the lead's summary name the finding and the line it is on?");
    expect(asked).toContain('one injection at src/app.js:3');
    expect(asked).toContain('@rev-1 →');
    expect((scoring[0]!.body as { tool_choice?: unknown }).tool_choice).toEqual({ type: 'tool', name: 'score' });
    const scored = run.events.find((e) => e.type === 'grader_scored');
    expect(scored).toMatchObject({ grader: 'clear', value: 0.8, reason: 'it names src/app.js:3', model: 'claude-haiku-4-5' });
    // Its cost is the run's: in --json's usage beside the team's, and in show's usage under its own name.
    const agents = run.json.agents as Record<string, { cost_usd: number }>;
    const teamUsd = Object.values(agents).reduce((sum, a) => sum + a.cost_usd, 0);
    const runUsd = (run.json.usage as { cost_usd: number }).cost_usd;
    expect(runUsd).toBeGreaterThan(teamUsd + 0.000001);
    const shown = await conclave(['show', 'review.session.jsonl'], { cwd: dir });
    expect(shown.stdout).toMatch(/\n {2}grader-clear +0 turns +1 calls /);

    const requests = server.requests.length;
    const graded = await conclave(['grade', 'review.session.jsonl', '--json'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    const clear = (JSON.parse(graded.stdout) as Graded).graders.clear!;
    expect(clear).toMatchObject({ value: 0.8, reason: 'it names src/app.js:3', model: 'claude-haiku-4-5' });
    expect(clear.cost_usd as number).toBeCloseTo(runUsd - teamUsd, 5);

    writeFileSync(join(dir, 'workflow.yml'), RUBRIC);
    const test = (bound: string) =>
      `workflow: workflow.yml\ncases:\n  - name: reviews\n    session: review.session.jsonl\n    expect:\n      status: success\n      graders:\n        clear: ${bound}\n`;
    writeFileSync(join(dir, 'review.test.yml'), test('{ min: 0.7 }'));
    const holds = await conclave(['test', 'review.test.yml'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(holds.code, holds.stdout + holds.stderr).toBe(0);
    writeFileSync(join(dir, 'review.test.yml'), test('{ min: 0.9 }'));
    const fails = await conclave(['test', 'review.test.yml', '--json'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(fails.code).toBe(1);
    expect(fails.stdout).toContain('grader clear is 0.8, under the 0.9 expected at least');
    expect(server.requests.length).toBe(requests);

    // The report and the job summary name it beside conclave's own.
    await conclave(['report', 'review.session.jsonl', '-o', 'run.html'], { cwd: dir });
    expect(readFileSync(join(dir, 'run.html'), 'utf8')).toMatch(/<code>clear<\/code><\/th><td>0\.8<\/td><td>the workflow&#39;s rubric/);
  });

  it("a grader id that is one of conclave's own is refused by validate; a scoring call that fails scores null and says why, the run's ending stands", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-rubric-'));
    writeFileSync(join(dir, 'own.yml'), `${GRADED_REVIEW}graders:\n  status: { rubric: x }\n`);
    const refused = await conclave(['validate', 'own.yml'], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stdout + refused.stderr).toMatch(/own\.yml:\d+:3: graders\.status: "status" is one of conclave's own graders/);

    server = await startFakeAnthropic({ ...gradedReviewScript(), '(grader)': [{ error: { status: 400, type: 'invalid_request_error', message: 'no' } }] });
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'app.js'), GRADED_APP);
    const run = await runWorkflow(server, RUBRIC, [], { dir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.events.find((e) => e.type === 'grader_scored')).toMatchObject({
      grader: 'clear',
      value: null,
      reason: expect.stringMatching(/^it could not be scored: /),
    });
    expect(run.stderr).toContain('the rubric grader clear it could not be scored');
  });
});
