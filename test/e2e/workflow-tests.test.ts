import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave, ROOT } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { GRADER_IDS } from '../../src/session/graders/graders.js';

/** `conclave test` (docs/testing-workflows.md): recorded runs as a workflow's regression suite, offline. */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A copy of examples/pr-review with its recording and test file, to change. */
function prReviewCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-tests-'));
  for (const file of ['pr-review.yml', 'pr-review.session.jsonl', 'pr-review.test.yml']) cpSync(join(ROOT, 'examples', file), join(dir, file));
  return dir;
}

function edit(file: string, from: string | RegExp, to: string): void {
  const text = readFileSync(file, 'utf8');
  const changed = text.replace(from, to);
  expect(changed, `${String(from)} in ${file}`).not.toBe(text);
  writeFileSync(file, changed);
}

/** Every file below `dir` with its size and time, to see that nothing was written. */
function snapshot(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const path = join(e.parentPath, e.name);
      const s = statSync(path);
      return `${path} ${s.size} ${s.mtimeMs}`;
    })
    .sort();
}

const lineOf = (file: string, text: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .findIndex((l) => l.includes(text)) + 1;

describe('conclave test, offline', () => {
  it('passes the recorded pr-review case from the repository: exit 0, no request to the API, JUnit without a failure, nothing written', async () => {
    server = await startFakeAnthropic({});
    const junit = join(mkdtempSync(join(tmpdir(), 'conclave-junit-')), 'results.xml');
    const before = snapshot(join(ROOT, 'examples'));
    const started = Date.now();
    const result = await conclave(['test', 'examples/pr-review.test.yml', '--junit', junit], {
      cwd: ROOT,
      env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    const wallMs = Date.now() - started;
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/examples\/pr-review\.test\.yml › asks for changes to a SQL injection\s+pass\s+1\/1/);
    expect(result.stdout).toContain('1 passed, 0 failed');
    expect(server.requests).toHaveLength(0);
    expect(wallMs).toBeLessThan(10_000);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<testsuites name="conclave test" tests="1" failures="0"/);
    expect(xml).toMatch(/<testcase name="asks for changes to a SQL injection" classname="examples\/pr-review\.test\.yml"[^>]*\/>/);
    expect(xml).not.toContain('<failure');
    expect(snapshot(join(ROOT, 'examples'))).toEqual(before);
  });

  it("a one-word change to the lead's prompt fails the case at the workflow line that changed, with a diff and the command that shows the call", async () => {
    const dir = prReviewCopy();
    edit(join(dir, 'pr-review.yml'), 'You lead the review', 'You run the review');
    const result = await conclave(['test'], { cwd: dir, env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: join(dir, 'summary.md') } });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    const changedLine = lineOf(join(dir, 'pr-review.yml'), 'You run the review');
    expect(result.stdout).toContain(
      `pr-review.yml:${changedLine}:7: asks for changes to a SQL injection: recording: the workflow changed: ` +
        "@lead's model call 1 of turn 1 differs from the recording at system\n--- recorded system\n+++ now system\n",
    );
    expect(result.stdout).toContain('\n-You lead the review of pull request #42 against main.\n+You run the review of pull request #42 against main.\n');
    expect(result.stdout).toContain('see the recorded call: conclave show pr-review.session.jsonl --event 6');
    expect(result.stdout).toContain(`::error file=pr-review.yml,line=${changedLine},col=7,title=conclave test › recording::`);
    expect(result.stdout).toContain('0 passed, 1 failed');
    // The command it names shows the recorded call whole: the prompt as recorded, and the response.
    const shown = await conclave(['show', 'pr-review.session.jsonl', '--event', '6'], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^#6 model call · @lead · turn 1 · call 1 · claude-sonnet-5-5 · \d+ in, \d+ out · \$\d\.\d{4}\n/);
    expect(shown.stdout).toContain('\n    You lead the review of pull request #42 against main.\n');
    expect(shown.stdout).toMatch(/\nresponse \(end_turn\):\n    @security /);
    // A later call of the lead is shown whole: the conversation its earlier calls sent is made whole again.
    const later = await conclave(['show', 'pr-review.session.jsonl', '--event', '68', '--format', 'json'], { cwd: dir });
    const event = JSON.parse(later.stdout) as { agent: string; request: { system: string; messages: unknown[] } };
    expect(event.agent).toBe('lead');
    expect(event.request.system).toContain('You lead the review of pull request #42');
    expect(event.request.messages.length).toBeGreaterThan(3);
    const missing = await conclave(['show', 'pr-review.session.jsonl', '--event', '999'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^conclave: pr-review\.session\.jsonl has no event #999 \(its events are numbered 1 to \d+\)\n$/);
  });

  it('a changed model fails at the line that sets it', async () => {
    const dir = prReviewCopy();
    edit(join(dir, 'pr-review.yml'), /^ {2}model: claude-sonnet-5-5/m, '  model: claude-opus-5');
    const result = await conclave(['test'], { cwd: dir });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    const modelLine = lineOf(join(dir, 'pr-review.yml'), 'model: claude-opus-5');
    expect(result.stdout).toContain(`pr-review.yml:${modelLine}:3: asks for changes to a SQL injection: recording: the workflow changed: @lead's model call 1`);
    expect(result.stdout).toContain('\n-claude-sonnet-5-5\n+claude-opus-5\n');
  });

  it('an expectation that does not hold: exit 1 at its line, a JUnit failure, and in GitHub Actions an annotation and the job summary', async () => {
    const dir = prReviewCopy();
    const test = join(dir, 'pr-review.test.yml');
    edit(test, 'verdict: request-changes\n        summary', 'verdict: approve\n        summary');
    edit(test, '- { agent: security, name: grep, input: { pattern: "query\\\\(" } }', '- { agent: security, name: grep, input: { pattern: "exec\\\\(" } }');
    const summary = join(dir, 'summary.md');
    const result = await conclave(['test', 'pr-review.test.yml', '--junit', 'junit.xml'], {
      cwd: dir,
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary },
    });
    expect(result.code, result.stdout + result.stderr).toBe(1);
    const verdictLine = lineOf(test, 'verdict: approve');
    const grepLine = lineOf(test, 'exec\\\\(');
    expect(result.stdout).toContain(
      `pr-review.test.yml:${verdictLine}:9: asks for changes to a SQL injection: outputs.verdict: output "verdict" is "request-changes", not "approve"`,
    );
    expect(result.stdout).toContain(`pr-review.test.yml:${grepLine}:11: asks for changes to a SQL injection: tools: no call of grep by @security with input`);
    expect(result.stdout).toContain('@security called: grep, vote');
    expect(result.stdout).toContain(
      `::error file=pr-review.test.yml,line=${verdictLine},col=9,title=conclave test › outputs.verdict::asks for changes to a SQL injection: output "verdict"`,
    );
    expect(result.stdout).toContain(`::error file=pr-review.test.yml,line=${grepLine},col=11,title=conclave test › tools::`);
    const xml = readFileSync(join(dir, 'junit.xml'), 'utf8');
    expect(xml).toMatch(/<testsuites name="conclave test" tests="1" failures="1"/);
    expect(xml).toContain(
      `<failure type="outputs.verdict" message="output &quot;verdict&quot; is &quot;request-changes&quot;, not &quot;approve&quot;">pr-review.test.yml:${verdictLine}:9:`,
    );
    // One failure element a case (the first that failed), the others in its text, so that a tool that recounts agrees with the file.
    expect(xml.match(/<failure /g)).toHaveLength(1);
    expect(xml).toMatch(/<failure type="outputs\.verdict"[^>]*>[^<]*\n[^<]*no call of grep by @security/);
    const written = readFileSync(summary, 'utf8');
    expect(written).toContain('## ❌ conclave test: 0 passed, 1 failed');
    expect(written).toMatch(/\| pr-review\.test\.yml › asks for changes to a SQL injection \| ❌ fail \| 0\/1 \|/);
  });

  // Debian's python3-junitparser, which .ci/run installs: elsewhere the test is skipped unless CI says it must run.
  const junitparser = spawnSync('/usr/bin/python3', ['-c', 'import junitparser']).status === 0;
  it.skipIf(!junitparser && !process.env.CI)(
    "the JUnit of a failing and a passing suite, read by Debian's junitparser: every count it recounts is the file's own (issue 81)",
    async () => {
      const dir = prReviewCopy();
      const test = join(dir, 'pr-review.test.yml');
      const passing = await conclave(['test', 'pr-review.test.yml', '--junit', 'pass.xml'], { cwd: dir });
      expect(passing.code, passing.stdout + passing.stderr).toBe(0);
      edit(test, 'verdict: request-changes\n        summary', 'verdict: approve\n        summary');
      edit(test, 'cost_usd: { max: 0.10 }', 'cost_usd: { max: 0.001 }');
      const failing = await conclave(['test', 'pr-review.test.yml', '--junit', 'fail.xml'], { cwd: dir });
      expect(failing.code).toBe(1);
      // Each suite as written, then as junitparser counts its cases again.
      const script = [
        'import sys',
        'from junitparser import JUnitXml',
        'for path in sys.argv[1:]:',
        '    for s in JUnitXml.fromfile(path):',
        '        written = (s.tests, s.failures, s.errors, s.skipped)',
        '        s.update_statistics()',
        '        print(path, written, (s.tests, s.failures, s.errors, s.skipped))',
      ].join('\n');
      const read = spawnSync('/usr/bin/python3', ['-c', script, 'pass.xml', 'fail.xml'], { cwd: dir, encoding: 'utf8' });
      expect(read.status, read.stderr).toBe(0);
      expect(read.stdout.trim().split('\n')).toEqual(['pass.xml (1, 0, 0, 0) (1, 0, 0, 0)', 'fail.xml (1, 1, 0, 0) (1, 1, 0, 0)']);
    },
  );

  it("votes, not_messages and the run's size (calls, turns, tokens, wall_s): hold on the recording, or fail at their line saying what the run did", async () => {
    const dir = prReviewCopy();
    const file = join(dir, 'pr-review.test.yml');
    const more = [
      '      votes: { security: request-changes, style: request-changes }',
      '      not_messages: [{ from: style, contains: "DROP TABLE" }]',
      '      calls: { max: 13 }',
      '      turns: { min: 2, max: 9 }',
      '      tokens: { min: 1 }',
      '      wall_s: { max: 60 }',
    ];
    edit(file, '      cost_usd: { max: 0.10 }', `      cost_usd: { max: 0.10 }\n${more.join('\n')}`);
    const held = await conclave(['test'], { cwd: dir });
    expect(held.code, held.stdout + held.stderr).toBe(0);
    edit(file, 'style: request-changes }', 'style: approve }');
    edit(file, 'calls: { max: 13 }', 'calls: { max: 5 }');
    edit(file, 'from: style, contains: "DROP TABLE"', 'from: security, contains: "users.js"');
    const failed = await conclave(['test'], { cwd: dir });
    expect(failed.code, failed.stderr).toBe(1);
    const at = (text: string) => `pr-review.test.yml:${lineOf(file, text)}`;
    expect(failed.stdout).toMatch(
      new RegExp(`${at('votes:')}:\\d+: .*: votes\\.style: @style did not vote "approve" \\(it voted "request-changes" on verdict\\)`),
    );
    expect(failed.stdout).toContain(`${at('calls:')}:7: asks for changes to a SQL injection: calls: the run took 13 calls, over the 5 expected at most`);
    expect(failed.stdout).toMatch(new RegExp(`${at('not_messages:')}:\\d+: .*: not_messages: @security wrote to @lead: "`));
    // An agent the workflow lacks, in a vote: refused before anything runs (exit 2), as the other expectations' names are.
    edit(file, 'style: approve }', 'styel: approve }');
    const invalid = await conclave(['test'], { cwd: dir });
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('the vote expected of @styel is not an agent of pr-review (did you mean "style"?)');
  });

  it('prints the results as JSON with each failure positioned', async () => {
    const dir = prReviewCopy();
    edit(join(dir, 'pr-review.test.yml'), 'cost_usd: { max: 0.10 }', 'cost_usd: { max: 0.01 }');
    const result = await conclave(['test', '--json'], { cwd: dir });
    expect(result.code, result.stderr).toBe(1);
    const json = JSON.parse(result.stdout) as { cases: Record<string, unknown>[]; passed: number; failed: number };
    expect(json).toMatchObject({ passed: 0, failed: 1 });
    expect(json.cases).toEqual([
      expect.objectContaining({
        file: 'pr-review.test.yml',
        name: 'asks for changes to a SQL injection',
        result: 'failed',
        runs: [
          expect.objectContaining({
            run: 1,
            result: 'failed',
            status: 'success',
            outputs: expect.objectContaining({ verdict: 'request-changes' }),
            cost_usd: 0,
            first_failure: expect.objectContaining({ expectation: 'cost_usd' }),
          }),
        ],
        passes: 0,
        cost_usd: 0,
        failures: [
          {
            expectation: 'cost_usd',
            line: lineOf(join(dir, 'pr-review.test.yml'), 'cost_usd'),
            column: 7,
            message: 'the run cost $0.0444, over the $0.01 expected at most',
          },
        ],
      }),
    ]);
  });
});

describe("the examples' tests", () => {
  const examples = readdirSync(join(ROOT, 'examples')).filter((f) => f.endsWith('.yml') && !f.endsWith('.test.yml'));

  it('every example workflow has a test file with a recorded case, and conclave test examples/ passes them all offline', async () => {
    expect(examples.length).toBeGreaterThanOrEqual(6);
    for (const example of examples) {
      const test = join(ROOT, 'examples', example.replace(/\.yml$/, '.test.yml'));
      const parsed = parse(readFileSync(test, 'utf8')) as { workflow: string; cases: { session: string }[] };
      expect(parsed.workflow, test).toBe(example);
      expect(parsed.cases.length, test).toBeGreaterThan(0);
      for (const c of parsed.cases) expect(statSync(join(ROOT, 'examples', c.session)).size, c.session).toBeGreaterThan(0);
    }
    const result = await conclave(['test', 'examples/', '--json'], { env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const json = JSON.parse(result.stdout) as { cases: { file: string; result: string }[]; passed: number; failed: number };
    expect(json.failed).toBe(0);
    expect(new Set(json.cases.map((c) => c.file)).size).toBe(examples.length);
  });

  it("schemas/test.schema.json, for editors, takes every example's test file and refuses an unknown key, as the reader does", () => {
    const Ajv = (Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020;
    const validate = new Ajv({ strict: false, validateFormats: false }).compile(
      JSON.parse(readFileSync(join(ROOT, 'schemas/test.schema.json'), 'utf8')) as object,
    );
    for (const example of examples) {
      const test = parse(readFileSync(join(ROOT, 'examples', example.replace(/\.yml$/, '.test.yml')), 'utf8')) as unknown;
      expect(validate(test), `${example}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    expect(validate({ workflow: 'a.yml', cases: [{ name: 'x', session: 's.jsonl', expect: { not_tool: [] } }] })).toBe(false);
    expect(validate({ workflow: 'a.yml', cases: [{ name: 'x', expect: { outputs: { a: { contains: 'b', matches: 'c' } } } }] })).toBe(false);
    // The graders by the ids conclave knows, each the same list as the reader's.
    const graders = (g: object) => validate({ workflow: 'a.yml', cases: [{ name: 'x', expect: { graders: g } }] });
    expect(graders({ duplicate_findings: { max: 0.2 }, unanswered_mentions: 0 })).toBe(true);
    expect(graders({ 'Not-an-id': { max: 0.2 } })).toBe(false);
    expect(graders({ idle_agents: { most: 1 } })).toBe(false);
    const schema = JSON.parse(readFileSync(join(ROOT, 'schemas/test.schema.json'), 'utf8'));
    expect(schema.$defs.expect.properties.graders.propertyNames.anyOf[0].enum).toEqual(GRADER_IDS);
  });

  it('validate checks a test file as conclave test reads it, beside workflows', async () => {
    const dir = prReviewCopy();
    const ok = await conclave(['validate', 'pr-review.yml', 'pr-review.test.yml'], { cwd: dir });
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toContain('pr-review.test.yml: ok');
    edit(join(dir, 'pr-review.test.yml'), 'cost_usd: { max: 0.10 }', 'cost_usd: { max: cheap }');
    const bad = await conclave(['validate', 'pr-review.test.yml'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toMatch(/^pr-review\.test\.yml:\d+:\d+: cost_usd must be \{ max: USD \}/m);
  });
});

describe('conclave test: a test file that cannot run', () => {
  it('an unknown expectation key and a misspelt status: exit 2, every problem positioned with a did-you-mean, no stack trace, no case run', async () => {
    const dir = prReviewCopy();
    const test = join(dir, 'pr-review.test.yml');
    edit(test, 'not_tools:', 'not_tool:');
    edit(test, 'status: success', 'status: sucess');
    const result = await conclave(['test', 'pr-review.test.yml', '--junit', 'junit.xml'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`pr-review.test.yml:${lineOf(test, 'status: sucess')}:15: status must be one of`);
    expect(result.stderr).toContain('(did you mean "success"?)');
    expect(result.stderr).toContain(`pr-review.test.yml:${lineOf(test, 'not_tool:')}:7: unknown key "not_tool" in cases[0].expect (did you mean "not_tools"?)`);
    expect(result.stderr).toContain('conclave: a test file is invalid (listed above); no case was run');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stdout).toBe('');
  });

  it('a missing recording, a recording of another workflow and a second broken file: all said at once, exit 2', async () => {
    const dir = prReviewCopy();
    writeFileSync(join(dir, 'other.yml'), 'name: other\nagents:\n  lead: { role: manager }\nkickoff: Go.\n');
    writeFileSync(
      join(dir, 'other.test.yml'),
      'workflow: other.yml\ncases:\n  - name: missing\n    session: recordings/none.jsonl\n  - name: of another\n    session: pr-review.session.jsonl\n',
    );
    writeFileSync(join(dir, 'broken.test.yml'), 'workflow: nowhere.yml\ncases: []\n');
    writeFileSync(
      join(dir, 'outside.test.yml'),
      'workflow: pr-review.yml\ncases:\n  - name: away\n    session: ../../home/x.jsonl\n    workspace: /\n  - name: over\n    session: pr-review.yml\n',
    );
    const result = await conclave(['test'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'other.test.yml:3:5: case "missing": its recording recordings/none.jsonl does not exist: record it with conclave test --live --update other.test.yml',
    );
    expect(result.stderr).toContain(
      'other.test.yml:5:5: case "of another": its recording pr-review.session.jsonl is a run of the workflow "pr-review", not of "other"',
    );
    expect(result.stderr).toContain('broken.test.yml:1:11: the workflow the cases run nowhere.yml does not exist');
    expect(result.stderr).toContain('broken.test.yml:2:8: cases must be a list of at least one case');
    expect(result.stderr).toContain('outside.test.yml:4:14: the recording ../../home/x.jsonl is outside the current folder: keep it below it');
    expect(result.stderr).toContain('outside.test.yml:5:16: the workspace / is outside the current folder');
    expect(result.stderr).toContain('outside.test.yml:7:14: the recording pr-review.yml must be a session file (.jsonl), as conclave writes them');
    expect(result.stderr).toContain('conclave: 3 files are invalid');
  });

  it('with no test file below the folder, or a path that is not there: exit 2 in one sentence', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'conclave-tests-'));
    const none = await conclave(['test'], { cwd: empty });
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('conclave: no test file (*.test.yml) below .\n');
    const missing = await conclave(['test', 'nope.test.yml'], { cwd: empty });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('conclave: nope.test.yml does not exist\n');
    const offlineRepeat = await conclave(['test', '--repeat', '3'], { cwd: empty });
    expect(offlineRepeat.stderr).toBe('conclave: --repeat runs cases against the API: add --live\n');
  });
});

const ANSWER = `
name: answer
defaults: { batch: true }
agents:
  lead: { role: manager }
kickoff: Is the answer yes? Call complete with the answer as the summary.
outputs:
  answer: $<< result.summary >>
`;

const ANSWER_TEST = `
workflow: answer.yml
cases:
  - name: says yes
    session: recordings/yes.session.jsonl
    expect:
      status: success
      outputs: { answer: "yes" }
`;

const complete = (summary: string) => ({ tools: [{ name: 'complete', input: { status: 'success', summary } }] });

function answerProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-tests-'));
  writeFileSync(join(dir, 'answer.yml'), ANSWER);
  writeFileSync(join(dir, 'answer.test.yml'), ANSWER_TEST);
  return dir;
}

describe('conclave test --live', () => {
  it('--repeat 5: passes out of five, exit 1 under the default pass rate, the five first calls in one message batch; --min-pass-rate 0.6 exits 0', async () => {
    const dir = answerProject();
    const env = (s: FakeAnthropic) => ({ ANTHROPIC_BASE_URL: s.url, ANTHROPIC_API_KEY: TEST_API_KEY });
    const script = () => ({ lead: [complete('yes'), complete('yes'), complete('yes'), complete('no'), complete('no')] });
    server = await startFakeAnthropic(script(), { batches: { endsAfterMs: 300 } });
    const strict = await conclave(['test', '--live', '--repeat', '5', '--json'], { cwd: dir, env: env(server) });
    expect(strict.code, strict.stderr).toBe(1);
    type RunJson = { run: number; result: string; status: string; outputs: Record<string, string>; cost_usd: number; first_failure?: { message: string } };
    const json = JSON.parse(strict.stdout) as {
      cases: { runs: RunJson[]; passes: number; result: string; cost_usd: number; histogram: object; failures: { message: string }[] }[];
    };
    expect(json.cases[0]).toMatchObject({ passes: 3, result: 'failed', histogram: { answer: { yes: 3, no: 2 } } });
    // Each run: its status, the output its expectations name, and its first failure (issue 81).
    const runs = json.cases[0]!.runs;
    expect(runs.map((r) => r.run)).toEqual([1, 2, 3, 4, 5]);
    expect(runs.filter((r) => r.result === 'passed').map((r) => r.outputs)).toEqual([{ answer: 'yes' }, { answer: 'yes' }, { answer: 'yes' }]);
    for (const r of runs) expect(r.status).toBe('success');
    for (const r of runs) expect(r.cost_usd).toBeGreaterThan(0);
    const failed = runs.filter((r) => r.result === 'failed');
    expect(failed.map((r) => r.first_failure?.message)).toEqual(['output "answer" is "no", not "yes"', 'output "answer" is "no", not "yes"']);
    expect(json.cases[0]!.cost_usd).toBeGreaterThan(0);
    expect(json.cases[0]!.failures[0]!.message).toMatch(/^run \d of 5: output "answer" is "no", not "yes"$/);
    expect(server.batches).toHaveLength(1);
    expect(server.batches[0]!.requests).toHaveLength(5);
    expect(server.requests.filter((r) => !r.batch)).toHaveLength(0);
    await server.close();

    server = await startFakeAnthropic(script(), { batches: { endsAfterMs: 300 } });
    const lenient = await conclave(['test', '--live', '--repeat', '5', '--min-pass-rate', '0.6', '--junit', 'repeats.xml'], { cwd: dir, env: env(server) });
    expect(lenient.code, lenient.stdout + lenient.stderr).toBe(0);
    expect(lenient.stdout).toMatch(/answer\.test\.yml › says yes\s+pass\s+3\/5\s+\$0\.\d{4}\s+\d+\.\d s/);
    // A case that passes by its rate still shows its failing runs, and the answers counted.
    expect(lenient.stdout).toContain('says yes: 3 of 5 runs passed');
    expect(lenient.stdout.match(/^ {2}run \d {2}FAIL {2}success {2}answer="no" {2}outputs\.answer: output "answer" is "no", not "yes"$/gm)).toHaveLength(2);
    expect(lenient.stdout.match(/^ {2}run \d {2}pass {2}success {2}answer="yes"$/gm)).toHaveLength(3);
    expect(lenient.stdout).toContain('  answer: "yes" ×3, "no" ×2');
    // The JUnit carries the same runs, as text a schema allows in a testcase.
    const junit = readFileSync(join(dir, 'repeats.xml'), 'utf8');
    expect(junit).toMatch(/<testsuite name="answer.test.yml" tests="1" failures="0" errors="0" skipped="0"/);
    expect(junit).toMatch(/<system-out>says yes: 3 of 5 runs passed\n {2}run 1 {2}(pass|FAIL)[^<]*answer: &quot;yes&quot; ×3, &quot;no&quot; ×2<\/system-out>/);
    expect(junit.match(/FAIL {2}success {2}answer=&quot;no&quot;/g)).toHaveLength(2);
    expect(server.batches).toHaveLength(1);
  });

  it('the API failing in a live run: exit 4, the case failed with the provider error', async () => {
    const dir = answerProject();
    writeFileSync(join(dir, 'answer.yml'), ANSWER.replace('defaults: { batch: true }\n', ''));
    const overloaded = { error: { status: 529, type: 'overloaded_error', message: 'Overloaded', retryAfterMs: 10 } };
    server = await startFakeAnthropic({ lead: Array.from({ length: 20 }, () => overloaded) });
    const result = await conclave(['test', '--live'], { cwd: dir, env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(result.code, result.stdout + result.stderr).toBe(4);
    expect(result.stdout).toMatch(/answer\.test\.yml:\d+:\d+: says yes: status: expected status success, got provider_error: .*[Oo]verloaded/);
    // Only the outage: not the output it left ungiven (issue 81).
    expect(result.stdout).not.toContain('outputs.answer');
    expect(result.stdout).toMatch(/^0 passed, 1 failed$/m);
  });

  it('--update keeps the first passing live run as the recording, written whole; the offline test then passes with no request', async () => {
    const dir = answerProject();
    server = await startFakeAnthropic({ lead: [complete('no'), complete('yes')] }, { batches: { endsAfterMs: 100 } });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const offlineFirst = await conclave(['test'], { cwd: dir, env });
    expect(offlineFirst.code).toBe(2);
    expect(offlineFirst.stderr).toContain('its recording recordings/yes.session.jsonl does not exist: record it with conclave test --live --update');
    const failing = await conclave(['test', '--live', '--update'], { cwd: dir, env });
    expect(failing.code).toBe(1);
    expect(readdirSync(dir)).not.toContain('recordings');
    const passing = await conclave(['test', '--live', '--update'], { cwd: dir, env });
    expect(passing.code, passing.stdout + passing.stderr).toBe(0);
    expect(passing.stderr).toContain('recordings/yes.session.jsonl: recorded "says yes" from a passing live run');
    expect(readdirSync(join(dir, 'recordings'))).toEqual(['yes.session.jsonl']);
    const requests = server.requests.length + server.batches.length;
    const offline = await conclave(['test'], { cwd: dir, env });
    expect(offline.code, offline.stdout + offline.stderr).toBe(0);
    expect(server.requests.length + server.batches.length).toBe(requests);
    // The recorded answer is replayed: the offline case fails when it expects another.
    edit(join(dir, 'answer.test.yml'), 'answer: "yes"', 'answer: "no"');
    expect((await conclave(['test'], { cwd: dir, env })).code).toBe(1);
  });

  it("a real past run's session, as conclave run wrote it, is a case's recording as it is (docs/testing-workflows.md)", async () => {
    const dir = answerProject();
    server = await startFakeAnthropic({ lead: [complete('yes')] }, { batches: { endsAfterMs: 100 } });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const live = await conclave(['run', 'answer.yml', '--session', 'past-run.jsonl'], { cwd: dir, env });
    expect(live.code, live.stderr).toBe(0);
    mkdirSync(join(dir, 'recordings'));
    cpSync(join(dir, 'past-run.jsonl'), join(dir, 'recordings', 'yes.session.jsonl'));
    const requests = server.requests.length + server.batches.length;
    const offline = await conclave(['test'], { cwd: dir, env: { ANTHROPIC_API_KEY: '' } });
    expect(offline.code, offline.stdout + offline.stderr).toBe(0);
    expect(offline.stdout).toContain('1 passed, 0 failed');
    expect(server.requests.length + server.batches.length).toBe(requests);
  });

  it('the hint for a missing recording is the command that records it; an expectation naming an agent or tool the workflow lacks fails validate (issue 81)', async () => {
    const dir = answerProject();
    server = await startFakeAnthropic({ lead: [complete('yes')] }, { batches: { endsAfterMs: 100 } });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const missing = await conclave(['test'], { cwd: dir, env });
    expect(missing.code).toBe(2);
    const hint = /record it with (conclave test --live --update \S+)/.exec(missing.stderr)?.[1];
    expect(hint).toBe('conclave test --live --update answer.test.yml');
    const recorded = await conclave(hint!.split(' ').slice(1), { cwd: dir, env });
    expect(recorded.code, recorded.stdout + recorded.stderr).toBe(0);
    expect(readdirSync(join(dir, 'recordings'))).toEqual(['yes.session.jsonl']);
    // An agent and a tool the workflow does not have: said by validate and test at their place, with a did-you-mean.
    edit(
      join(dir, 'answer.test.yml'),
      'status: success',
      'status: success\n      tools: [{ agent: laed, name: grepp }]\n      messages: [{ from: lead, to: tonne }]',
    );
    for (const args of [['validate', 'answer.test.yml'], ['test']]) {
      const refused = await conclave(args, { cwd: dir, env });
      expect(refused.code, args[0]).toBe(2);
      const said = refused.stdout + refused.stderr;
      expect(said).toMatch(/answer\.test\.yml:\d+:\d+: the call expected of @laed is not an agent of answer \(did you mean "lead"\?\)/);
      expect(said).toMatch(/answer\.test\.yml:\d+:\d+: no agent of answer can call "grepp" \(did you mean "grep"\?\)/);
      expect(said).toContain('the message expected to @tonne is not an agent of answer');
    }
  });

  it('--case runs the cases of a name (a * pattern); --bail stops at the first that fails (issue 81)', async () => {
    const dir = answerProject();
    server = await startFakeAnthropic({ lead: [complete('yes')] }, { batches: { endsAfterMs: 100 } });
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    expect((await conclave(['test', '--live', '--update'], { cwd: dir, env })).code).toBe(0);
    const yes = '  - name: says yes\n    session: recordings/yes.session.jsonl\n    expect:\n      outputs: { answer: "yes" }\n';
    const no = '  - name: says no\n    session: recordings/yes.session.jsonl\n    expect:\n      outputs: { answer: "no" }\n';
    writeFileSync(join(dir, 'answer.test.yml'), `workflow: answer.yml\ncases:\n${no}${yes}`);
    const one = await conclave(['test', '--case', 'says y*', '--json'], { cwd: dir });
    expect(one.code, one.stdout + one.stderr).toBe(0);
    expect((JSON.parse(one.stdout) as { cases: { name: string }[] }).cases.map((c) => c.name)).toEqual(['says yes']);
    const all = await conclave(['test'], { cwd: dir });
    expect(all.stdout).toContain('1 passed, 1 failed');
    const bail = await conclave(['test', '--bail'], { cwd: dir });
    expect(bail.code).toBe(1);
    expect(bail.stdout).toContain('0 passed, 1 failed');
    expect(bail.stderr).toContain('--bail: stopped at the first case that failed; 1 not run');
    const none = await conclave(['test', '--case', 'says maybe'], { cwd: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no case is named "says maybe"');
  });
});
