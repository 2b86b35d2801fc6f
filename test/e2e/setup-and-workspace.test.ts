import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { channelOf, runWorkflow, TEST_API_KEY } from '../helpers/run-workflow.js';

let server: FakeAnthropic;
afterEach(() => server?.close());

describe('conclave run: setup steps and the kickoff', () => {
  it('delivers a 100 KB kickoff (an embedded diff) to the lead whole', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'Read it all.' }] });
    const run = await runWorkflow(
      server,
      `
name: big
setup:
  - id: diff
    run: seq 1 19000
agents:
  lead: { role: manager }
kickoff: |
  @lead Review this diff:
  $<< setup.diff >>
`,
    );
    expect(run.code).toBe(0);
    const diff = Array.from({ length: 19000 }, (_, i) => i + 1).join('\n');
    expect(diff.length).toBeGreaterThan(100_000);
    expect(channelOf(run)[0]![2]).toBe(`@lead Review this diff:\n${diff}\n`);
    expect(lastUserText(server.of('lead')[0]!)).toContain(`[from kickoff]\n@lead Review this diff:\n${diff}\n`);
  });

  it('stops before any model call when a setup step fails, showing its stderr', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'never' }] });
    const run = await runWorkflow(
      server,
      `
name: broken-setup
setup:
  - id: diff
    run: |
      echo "fatal: bad revision 'origin/nope'" >&2; exit 128
agents:
  lead: { role: manager }
kickoff: $<< setup.diff >>
`,
    );
    expect(run.code).toBe(1);
    expect(run.json.reason).toBe(`setup step "diff" exited with code 128\nfatal: bad revision 'origin/nope'`);
    expect(run.stderr).toContain('setup diff: failed');
    expect(server.requests).toHaveLength(0);
  });

  it('never runs an input value as shell code', async () => {
    server = await startFakeAnthropic({ lead: [{ text: 'ok' }] });
    const evil = '$(touch pwned) `touch pwned2`; touch pwned3';
    const run = await runWorkflow(
      server,
      `
name: quoting
inputs:
  title: { type: string, required: true }
setup:
  - id: echo
    run: printf '%s|' $<< inputs.title >> "$INPUT_TITLE"
agents:
  lead: { role: manager }
kickoff: "Title: $<< setup.echo >>"
`,
      ['-i', `title=${evil}`],
    );
    expect(run.code).toBe(0);
    for (const file of ['pwned', 'pwned2', 'pwned3']) expect(existsSync(join(run.dir, file))).toBe(false);
    expect(channelOf(run)[0]![2]).toBe(`Title: ${evil}|${evil}|`);
  });

  it('refuses to run without ANTHROPIC_API_KEY, saying how to set it, before any setup step', async () => {
    server = await startFakeAnthropic({});
    const run = await runWorkflow(
      server,
      `
name: no-key
setup:
  - id: mark
    run: touch setup-ran
agents:
  lead: { role: manager }
kickoff: hi
`,
      [],
      { env: { ANTHROPIC_API_KEY: '' } },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('conclave: ANTHROPIC_API_KEY is not set, so no model can be called.');
    expect(run.stderr).toContain('export ANTHROPIC_API_KEY=sk-ant-...');
    expect(existsSync(join(run.dir, 'setup-ran'))).toBe(false);
    expect(run.events).toEqual([]);
  });

  it('rejects a missing or mistyped input with its description (exit 2)', async () => {
    server = await startFakeAnthropic({});
    const workflow = `
name: inputs
inputs:
  pr: { type: integer, required: true, description: Pull request number }
agents:
  lead: { role: manager }
kickoff: PR $<< inputs.pr >>
`;
    const missing = await runWorkflow(server, workflow);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('conclave: input "pr" is required (Pull request number): give it with -i pr=VALUE\n');
    const wrong = await runWorkflow(server, workflow, ['-i', 'pr=12a']);
    expect(wrong.stderr).toBe('conclave: input "pr" must be a whole number (Pull request number); got "12a"\n');
    const unknown = await runWorkflow(server, workflow, ['-i', 'pr=1', '-i', 'rp=2']);
    expect(unknown.stderr).toBe('conclave: the workflow has no input "rp" (did you mean "pr"?); its inputs are pr\n');
  });
});

describe('conclave run: workspace tools', () => {
  it('refuses ../, absolute paths and symbolic links, as tool errors', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'conclave-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'top secret');
    const dir = mkdtempSync(join(tmpdir(), 'conclave-workspace-'));
    writeFileSync(join(dir, 'inside.txt'), 'hello from inside');
    symlinkSync(outside, join(dir, 'escape'));
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'link.txt'));
    mkdirSync(join(dir, 'sub'));
    const calls = [
      { name: 'read_file', input: { path: '../secret.txt' } },
      { name: 'read_file', input: { path: join(outside, 'secret.txt') } },
      { name: 'read_file', input: { path: 'escape/secret.txt' } },
      { name: 'read_file', input: { path: 'link.txt' } },
      { name: 'write_file', input: { path: 'escape/planted.txt', content: 'x' } },
      { name: 'list_files', input: { path: 'sub/../..' } },
      { name: 'read_file', input: { path: 'inside.txt' } },
      { name: 'write_file', input: { path: 'sub/new/notes.md', content: 'notes' } },
    ];
    server = await startFakeAnthropic({ lead: [{ tools: calls }, { text: 'done' }] });
    const run = await runWorkflow(
      server,
      `
name: confined
agents:
  lead: { role: manager, tools: [read_file, write_file, list_files] }
kickoff: Look around.
`,
      [],
      { dir },
    );
    expect(run.code).toBe(0);
    const results = server.of('lead')[1]!.body.messages.at(-1)!.content as { content: string; is_error?: boolean }[];
    expect(results.map((r) => [r.is_error ?? false, r.content])).toEqual([
      [true, '../secret.txt: paths may not contain ".."'],
      [true, `${join(outside, 'secret.txt')}: absolute paths are not allowed; give a path relative to the workspace`],
      [true, 'escape/secret.txt: escape is a symbolic link; the workspace tools do not follow links'],
      [true, 'link.txt is a symbolic link; the workspace tools do not follow links'],
      [true, 'escape/planted.txt: escape is a symbolic link; the workspace tools do not follow links'],
      [true, 'sub/../..: paths may not contain ".."'],
      [false, 'hello from inside'],
      [false, 'wrote 5 bytes to sub/new/notes.md'],
    ]);
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(readFileSync(join(dir, 'sub/new/notes.md'), 'utf8')).toBe('notes');
  });
});

describe('the workspace a run records, and its resume', () => {
  const WORKFLOW = `
name: tree
agents:
  lead: { role: manager, tools: [read_file] }
  helper: { role: worker, tools: [read_file] }
kickoff: Read it.
`;

  it('a resume reads the tree the run was given (--workspace below the current directory), and refuses another from a session’s word', async () => {
    server = await startFakeAnthropic({
      lead: [
        { tools: [{ name: 'read_file', input: { path: 'only-here.txt' } }] },
        { text: '@helper read it too.' },
        { tools: [{ name: 'complete', input: { status: 'success', summary: 'Both read it.' } }] },
      ],
      helper: [{ tools: [{ name: 'read_file', input: { path: 'only-here.txt' } }] }, { text: 'Read.' }],
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-tree-'));
    mkdirSync(join(dir, 'tree'));
    writeFileSync(join(dir, 'tree', 'only-here.txt'), 'the tree of the pull request\n');
    const run = await runWorkflow(server, WORKFLOW, ['--workspace', 'tree', '--max-turns', '1'], { dir });
    const session = join(dir, run.json.session as string);
    const header = JSON.parse(readFileSync(session, 'utf8').split('\n')[0]!);
    expect(header.workspace).toBe('tree');
    expect(lastUserText(server.of('lead')[1]!)).toContain('the tree of the pull request');
    expect(run.code, run.stderr).toBe(3);
    // Resumed with no --workspace: the same tree, not the current directory.
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY };
    const resumed = await conclave(['resume', session, '--max-turns', '4', '--json'], { cwd: dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(lastUserText(server.of('helper')[1]!)).toContain('the tree of the pull request');
    // A session file that names a workspace outside the current directory: refused, nothing called.
    const lines = readFileSync(session, 'utf8').split('\n');
    writeFileSync(
      join(dir, 'forged.jsonl'),
      `${[JSON.stringify({ ...header, run_id: '20261128T000000Z-000000', workspace: '../../etc' }), ...lines.slice(1, 3)].join('\n')}\n`,
    );
    const calls = server.requests.length;
    const forged = await conclave(['resume', 'forged.jsonl'], { cwd: dir, env });
    expect(forged.code).toBe(2);
    expect(forged.stderr).toContain('forged.jsonl names its workspace as "../../etc", outside the current directory: give it with --workspace DIR');
    expect(forged.stderr).not.toMatch(/\n\s+at /);
    expect(server.requests.length).toBe(calls);
  });
});
