import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { runWorkflow } from '../helpers/run-workflow.js';
import { githubSarifErrors, sarifValidator } from '../helpers/sarif.js';

const WORKFLOW = `
name: review
agents:
  lead: { role: manager, tools: [annotate, read_file] }
kickoff: Review src/app.js.
`;

const APP =
  "const db = require('db');\nfunction find(name) {\n  return db.query(`SELECT * FROM users WHERE name = '${name}'`);\n}\nmodule.exports = { find };\n";

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('findings: the annotate tool', () => {
  it('records findings on real lines, refuses the others, and shows them in show, Actions annotations, the job summary and SARIF', async () => {
    const calls = [
      { path: 'src/app.js', line: 3, level: 'failure', title: 'SQL injection', message: 'name is spliced into the query: pass it as a parameter.' },
      { path: './src/app.js', line: 2, end_line: 4, level: 'notice', message: 'find has no test.' },
      { path: 'src/app.js', line: 9, level: 'warning', message: 'a line that is not there' },
      { path: 'src/missing.js', line: 1, level: 'warning', message: 'a file that is not there' },
      { path: '../outside.js', line: 1, level: 'warning', message: 'outside the workspace' },
      { path: 'src/app.js', line: 1, level: 'critical', message: 'no such level' },
    ];
    server = await startFakeAnthropic({
      lead: [
        { tools: calls.map((input, i) => ({ name: 'annotate', input, id: `toolu_annotate_${i}` })) },
        { tools: [{ name: 'complete', input: { status: 'success', summary: 'reviewed' } }] },
      ],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-findings-'));
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'app.js'), APP);
    writeFileSync(join(dir, 'output.txt'), '');
    writeFileSync(join(dir, 'summary.md'), '');
    const github = { GITHUB_ACTIONS: 'true', GITHUB_WORKSPACE: dir, GITHUB_OUTPUT: join(dir, 'output.txt'), GITHUB_STEP_SUMMARY: join(dir, 'summary.md') };
    const run = await runWorkflow(server, WORKFLOW, ['--sarif', 'findings.sarif'], { dir, env: github });
    expect(run.code, run.stderr).toBe(0);

    const results = lastUserText(server.of('lead')[1]!).split('\n');
    expect(results).toEqual([
      'Recorded: failure on src/app.js:3.',
      'Recorded: notice on src/app.js:2-4.',
      'src/app.js has 5 lines: there is no line 9',
      expect.stringMatching(/^ENOENT|src\/missing\.js/),
      expect.stringMatching(/outside the workspace|\.\.\/outside\.js/),
      'level must be one of notice, warning, failure, error; got "critical"',
    ]);

    // GitHub Actions: an annotation on each finding's lines (stderr with --json).
    expect(run.stderr).toContain('::error file=src/app.js,line=3,endLine=3,title=SQL injection::name is spliced into the query: pass it as a parameter.\n');
    expect(run.stderr).toContain('::notice file=src/app.js,line=2,endLine=4::find has no test.\n');
    expect(run.stderr).not.toContain('line=9');
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain(
      '### Findings\n\n| level | where | finding | by |\n|---|---|---|---|\n| failure | `src/app.js:3` | **SQL injection**: name is spliced into the query: pass it as a parameter. | @lead |\n| notice | `src/app.js:2-4` | find has no test. | @lead |',
    );

    const shown = await conclave(['show', run.json.session as string], { cwd: dir });
    expect(shown.stdout).toContain(
      '\nFindings:\n  failure src/app.js:3 — SQL injection: name is spliced into the query: pass it as a parameter. (@lead)\n  notice src/app.js:2-4 — find has no test. (@lead)\n',
    );

    const sarif = JSON.parse(readFileSync(join(dir, 'findings.sarif'), 'utf8'));
    expect(sarifValidator()(sarif)).toEqual([]);
    // What GitHub's code scanning requires of an upload (a full description and help per rule).
    expect(githubSarifErrors(join(dir, 'findings.sarif'))).toEqual([]);
    expect(sarif.runs[0].tool.driver.informationUri).toMatch(/^https:\/\//);
    expect(sarif.runs[0].results).toHaveLength(2);
    expect(sarif.runs[0].results[0]).toMatchObject({
      ruleId: 'conclave/failure',
      level: 'error',
      message: { text: 'SQL injection: name is spliced into the query: pass it as a parameter.' },
      locations: [{ physicalLocation: { artifactLocation: { uri: 'src/app.js' }, region: { startLine: 3, endLine: 3 } } }],
    });
    // The validator is not a formality: a result without a message is refused.
    expect(sarifValidator()({ ...sarif, runs: [{ ...sarif.runs[0], results: [{ ruleId: 'x' }] }] })).not.toEqual([]);

    // Resume and replay keep them: --replay writes the same SARIF.
    const replay = await conclave(['run', 'workflow.yml', '--replay', run.json.session as string, '--sarif', 'again.sarif', '--json'], { cwd: dir });
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'again.sarif'), 'utf8'))).toEqual(sarif);
  });

  it("a file named with #, ? and a space is a SARIF uri that resolves to it; a path in another form than the repository's is refused; level error is a failure", async () => {
    server = await startFakeAnthropic({
      lead: [
        {
          tools: [
            { name: 'annotate', input: { path: 'docs/a #1?.md', line: 1, level: 'warning', message: 'odd name' } },
            { name: 'annotate', input: { path: 'docs/b.md/', line: 1, level: 'warning', message: 'trailing slash' } },
            { name: 'annotate', input: { path: 'docs//b.md', line: 1, level: 'warning', message: 'double slash' } },
            { name: 'annotate', input: { path: 'docs/./b.md', line: 1, level: 'warning', message: 'dot' } },
            { name: 'annotate', input: { path: 'docs/b.md', line: 1, level: 'error', message: "GitHub's and SARIF's word" } },
          ],
        },
        { text: 'done' },
      ],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-findings-'));
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'a #1?.md'), 'one\n');
    writeFileSync(join(dir, 'docs', 'b.md'), 'one\n');
    const run = await runWorkflow(server, WORKFLOW, ['--sarif', 'findings.sarif'], { dir, env: { GITHUB_WORKSPACE: dir } });
    expect(run.code, run.stderr).toBe(0);
    const results = lastUserText(server.of('lead')[1]!).split('\n');
    expect(results[0]).toBe('Recorded: warning on docs/a #1?.md:1.');
    for (const refused of results.slice(1, 4)) expect(refused).toMatch(/name the file as the repository does/);
    expect(results[4]).toBe('Recorded: failure on docs/b.md:1.');
    const sarif = JSON.parse(readFileSync(join(dir, 'findings.sarif'), 'utf8'));
    expect(sarif.runs[0].results).toHaveLength(2);
    expect(sarif.runs[0].results[1]).toMatchObject({ level: 'error', ruleId: 'conclave/failure' });
    const uri = sarif.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri as string;
    expect(uri).toBe('docs/a%20%231%3F.md');
    // Resolved as a URI reference against the repository root, it is that file.
    expect(decodeURIComponent(new URL(uri, `file://${dir}/`).pathname)).toBe(join(dir, 'docs', 'a #1?.md'));
  });
});
