import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { CRASH_WORKFLOW, crashScript } from '../fixtures/crash-team.js';
import { conclave } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

/** GitHub's GITHUB_OUTPUT file format: name=value lines and name<<DELIMITER blocks. */
function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^=<]+)<<(.+)$/.exec(lines[i]!);
    if (!heredoc) continue;
    const end = lines.indexOf(heredoc[2]!, i + 1);
    outputs[heredoc[1]!] = lines.slice(i + 1, end).join('\n');
    i = end;
  }
  return outputs;
}

function githubEnv(dir: string) {
  writeFileSync(join(dir, 'output.txt'), '');
  writeFileSync(join(dir, 'summary.md'), '');
  return { GITHUB_ACTIONS: 'true', GITHUB_OUTPUT: join(dir, 'output.txt'), GITHUB_STEP_SUMMARY: join(dir, 'summary.md') };
}

describe('conclave in GitHub Actions', () => {
  it('writes the step outputs, the job summary, masks and per-agent groups', async () => {
    server = await startFakeAnthropic(crashScript(0));
    const dir = mkdtempSync(join(tmpdir(), 'conclave-gha-'));
    writeFileSync(join(dir, 'workflow.yml'), `${CRASH_WORKFLOW}  multi: "line one\\nline two"\n`);
    const env = { ...githubEnv(dir), ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const run = await conclave(['run', 'workflow.yml', '--quiet'], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(0);
    const outputs = parseOutputs(readFileSync(join(dir, 'output.txt'), 'utf8'));
    expect(outputs).toMatchObject({ status: 'success', 'exit-code': '0', verdict: 'ship', summary: 'verdict ship', multi: 'line one\nline two' });
    expect(JSON.parse(outputs.outputs!)).toMatchObject({ verdict: 'ship', multi: 'line one\nline two' });
    expect(Number(outputs['cost-usd'])).toBeGreaterThan(0);
    expect(outputs['session-file']).toMatch(/^\.conclave\/sessions\/.+\.jsonl$/);
    expect(run.stdout.startsWith(`::add-mask::${TEST_API_KEY}\n`)).toBe(true);
    expect(run.stdout).toContain('::group::@lead: ');
    expect(run.stdout).toContain('::endgroup::');
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain('## ✅ conclave: workflow.yml');
    expect(summary).toContain('<details><summary>@a — ');
    expect(summary).toContain('| verdict | Ship it? | decided **ship** | ship: 2, hold: 0 |');
    expect(summary).toMatch(/\| \*\*total\*\* \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \$0\.\d{4} \|/);
    for (const text of [run.stdout, run.stderr, summary]) expect(text.replace(`::add-mask::${TEST_API_KEY}`, '')).not.toContain(TEST_API_KEY);

    // A --replay's own session holds only what it added: its summary is made from the recording too.
    const replay = await conclave(['run', 'workflow.yml', '--quiet', '--replay', outputs['session-file']!], {
      cwd: dir,
      env: { ...githubEnv(dir), ANTHROPIC_API_KEY: '' },
    });
    expect(replay.code, replay.stderr).toBe(0);
    const replayed = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(replayed).toContain('<details><summary>@a — ');
    expect(replayed).toContain('| verdict | Ship it? | decided **ship** | ship: 2, hold: 0 |');
  });

  it('shows messages in the job summary as they are: no line of theirs changes its structure', async () => {
    const diff = 'Here is the diff:\nfunction a() {}\n--- a/app.js\n+++ b/app.js\n</details>\n# not a heading\n``` not a fence end';
    server = await startFakeAnthropic({
      lead: [{ text: `@helper ${diff}` }, { tools: [{ name: 'complete', input: { status: 'success', summary: '</details>\n---' } }] }],
      helper: [{ text: 'seen' }],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-gha-'));
    writeFileSync(join(dir, 'workflow.yml'), 'name: diff\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: Go.\n');
    const run = await conclave(['run', 'workflow.yml', '--quiet'], {
      cwd: dir,
      env: { ...githubEnv(dir), ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain(`\`\`\`\`text\n@helper ${diff}\n\`\`\`\``);
    expect(summary).toContain('```text\n</details>\n---\n```');
    // Every <details> the summary opens, it closes: no message closed one early.
    const outside = summary.replace(/(`{3,})text\n[\s\S]*?\n\1(?=\n)/g, '');
    expect(outside.match(/<details>/g)?.length).toBe(outside.match(/<\/details>/g)?.length);
    expect(outside).not.toContain('--- a/app.js');
  });

  it('keeps the job summary under 1 MiB by cutting long messages, with a note', async () => {
    server = await startFakeAnthropic({
      lead: [{ text: `@helper ${'x'.repeat(300_000)}` }, { text: 'y'.repeat(300_000) }],
      helper: [{ text: 'z'.repeat(600_000) }],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-gha-'));
    writeFileSync(
      join(dir, 'workflow.yml'),
      'name: big\ndefaults: { compact_at: 500000 }\nagents:\n  lead: { role: manager }\n  helper: { role: worker }\nkickoff: "@lead talk a lot"\n',
    );
    const run = await conclave(['run', 'workflow.yml', '--quiet'], {
      cwd: dir,
      env: { ...githubEnv(dir), ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY },
    });
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(Buffer.byteLength(summary)).toBeLessThan(1024 * 1024);
    expect(summary).toMatch(/\*3 long messages were cut to keep this summary under GitHub's 1 MiB limit: `conclave show` prints them whole\.\*/);
    expect(summary).toContain('more characters in the session file)*');
  });

  it('reports validation errors as annotations with file, line and column', async () => {
    const result = await conclave(['validate', 'test/corpus/graph-cycle.yml'], { env: { GITHUB_ACTIONS: 'true' } });
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      '::error file=test/corpus/graph-cycle.yml,line=4,col=35,title=conclave workflow error::reports_to forms a cycle: a → b → a\n',
    );
    const run = await conclave(['run', 'test/corpus/top-bad-name.yml'], { env: { GITHUB_ACTIONS: 'true', ANTHROPIC_API_KEY: TEST_API_KEY } });
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/^::error file=test\/corpus\/top-bad-name\.yml,line=1,col=7,title=conclave workflow error::name must be lowercase letters/);
  });
});
