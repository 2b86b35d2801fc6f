import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';

/**
 * The fourth round of attacks (issue 38): model text that tries to escape the job summary and
 * `show --format markdown`, hostile session files, credentials in a collector's URL, and a
 * workflow nested too deep for the YAML parser.
 */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** What a model writes to break out of a table cell, a heading or a chart. */
const ESCAPE = [
  'approve |',
  '',
  '## ✅ conclave: PASSED',
  '',
  '```mermaid',
  'flowchart LR',
  '  A-->B',
  '  click A href "https://evil.example/"',
  '```',
  '%%{init: {"theme": "dark"}}%%',
  '<details><summary>hidden</summary>',
  '<img src=x onerror=alert(1)>',
].join('\n');

const TEAM = `
name: escape
agents:
  lead: { role: manager, tools: [annotate] }
  a: { role: worker }
kickoff: Go.
`;

/** The Markdown outside fenced blocks (the transcript's fences hold model text as it is, and show it as code). */
function outsideFences(markdown: string): { text: string; mermaid: string[] } {
  const lines = markdown.split('\n');
  const outside: string[] = [];
  const mermaid: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\w*)$/.exec(lines[i]!);
    if (!open) {
      outside.push(lines[i]!);
      continue;
    }
    const end = lines.indexOf(open[1]!, i + 1);
    if (open[2] === 'mermaid') mermaid.push(lines.slice(i + 1, end).join('\n'));
    i = end;
  }
  return { text: outside.join('\n'), mermaid };
}

function expectNoEscape(markdown: string, headings: RegExp): void {
  const { text, mermaid } = outsideFences(markdown);
  for (const line of text.split('\n').filter((l) => /^#{1,6} /.test(l))) expect(line, 'a heading conclave did not write').toMatch(headings);
  expect(text).not.toMatch(/<img|<details><summary>hidden/);
  expect(text.match(/<details>/g)?.length ?? 0).toBe(text.match(/<\/details>/g)?.length ?? 0);
  for (const chart of mermaid) expect(chart).not.toMatch(/click|href|%%|flowchart/);
  // The proposal's table stays one row.
  const table = text.split('\n').slice(text.split('\n').findIndex((l) => /^#+ Proposals/.test(l)) + 2);
  expect(table.slice(0, 3).map((l) => l.startsWith('|'))).toEqual([true, true, true]);
  expect(table[3]).toBe('');
}

describe('model text stays inside the job summary and show --format markdown', () => {
  it('a proposal option, a question, a vote, a finding and a reason with newlines, pipes, fences, Mermaid and HTML change no structure', async () => {
    server = await startFakeAnthropic({
      lead: (r) =>
        [
          { tools: [{ name: 'propose', input: { id: 'verdict', question: `Ship? ${ESCAPE}`, options: [ESCAPE, 'reject'], voters: ['a'] } }] },
          { tools: [{ name: 'annotate', input: { path: 'a.ts', line: 1, level: 'warning', title: '`t` [x](javascript:alert(1))', message: ESCAPE } }] },
          { text: '@a vote please' },
        ][r.call - 1] ?? { tools: [{ name: 'complete', input: { status: 'success', summary: ESCAPE } }] },
      a: (r) => (r.call === 1 ? { tools: [{ name: 'vote', input: { proposal: 'verdict', option: ESCAPE, reason: ESCAPE } }] } : { text: 'voted' }),
    });
    const dir = mkdtempSync(join(tmpdir(), 'conclave-escape-'));
    writeFileSync(join(dir, 'workflow.yml'), TEAM);
    writeFileSync(join(dir, 'a.ts'), 'export {};\n');
    writeFileSync(join(dir, 'summary.md'), '');
    const env = { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: TEST_API_KEY, GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: join(dir, 'summary.md') };
    const run = await conclave(['run', 'workflow.yml', '--json'], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(summary).toContain('### Proposals');
    expect(summary).toContain('### Findings');
    expectNoEscape(summary, /^(## ✅ conclave: workflow\.yml|### (Estimate before the run|Outputs|Transcript|Findings|Proposals|Timeline|Usage and cost))$/);
    const session = (JSON.parse(run.stdout) as { session: string }).session;
    const shown = await conclave(['show', '--format', 'markdown', session], { cwd: dir });
    expect(shown.code, shown.stderr).toBe(0);
    expectNoEscape(shown.stdout, /^(# workflow\.yml|## (Outputs|Transcript|Findings|Proposals|Timeline|Usage))$/);
  });
});

/** A session file: a header, then the given events, numbered. */
function sessionFile(events: Record<string, unknown>[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-hostile-session-'));
  const header = {
    type: 'header',
    format: 1,
    run_id: 'r',
    conclave_version: '0.1.0',
    workflow: { path: 'w.yml', sha256: 'x' },
    inputs: {},
    session: 's.jsonl',
    started_at: '2026-11-25T00:00:00Z',
  };
  const file = join(dir, 's.jsonl');
  writeFileSync(file, `${[header, ...events.map((e, i) => ({ seq: i + 1, ...e }))].map((l) => JSON.stringify(l)).join('\n')}\n`);
  return file;
}

describe('hostile session files', () => {
  it('20,000 chained spawns: show (text, markdown, json) and trace print them, no stack overflow', async () => {
    const spawns = Array.from({ length: 20_000 }, (_, i) => ({
      type: 'agent_spawned',
      agent: `a${i + 1}`,
      template: 't',
      role: 'manager',
      parent: i === 0 ? 'lead' : `a${i}`,
      depth: i + 1,
    }));
    const file = sessionFile([
      { type: 'run_started', workflow: 'w', limits: { timeoutMs: 1, maxTurns: 1, maxTurnsPerAgent: 1, budgetUsd: 1, maxTokensTotal: null, concurrency: 1 } },
      // The lead took a turn, so the usage tables hold the whole chain below it (each row indented by its depth, once).
      { type: 'turn_started', agent: 'lead', turn: 1, through: 0, messages: [] },
      ...spawns,
    ]);
    for (const format of ['text', 'markdown', 'json']) {
      const shown = await conclave(['show', '--format', format, file]);
      expect(shown.code, `${format}: ${shown.stderr.slice(0, 500)}`).toBe(0);
      expect(shown.stderr).not.toMatch(/RangeError|internal error/);
      if (format !== 'json') expect(shown.stdout.length, format).toBeLessThan(20 * 1024 * 1024);
      if (format !== 'json') expect(shown.stdout).toContain('a20000');
    }
    const traced = await conclave(['trace', '--format', 'json', file]);
    expect(traced.stderr).not.toMatch(/RangeError|internal error/);
    expect(traced.code, traced.stderr.slice(0, 500)).toBe(0);
  }, 60_000);

  it.each([
    ['%%{init: {"theme":"dark"}}%%'],
    ['click lead href "javascript:alert(1)"'],
    ['</details><img src=x onerror=alert(1)>'],
    ['## forged heading'],
    ['a\nb'],
  ])('an agent name no workflow allows (%j) is refused when read, naming the line: exit 2', async (name) => {
    const file = sessionFile([{ type: 'turn_started', agent: name, turn: 1, through: 0, messages: [] }]);
    for (const args of [
      ['show', '--format', 'markdown', file],
      ['trace', '--format', 'json', file],
    ]) {
      const r = await conclave(args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/s\.jsonl:2: a damaged turn_started event: "agent" must be an agent name/);
      expect(r.stdout).not.toContain('onerror');
    }
  });
});

describe('a workflow nested too deep for the YAML parser', () => {
  const head = 'name: deep\nagents:\n  lead: { role: manager }\nkickoff: hi\nx:\n';
  const shapes: Record<string, string> = {
    'mappings, two spaces a level': Array.from({ length: 2300 }, (_, i) => `${'  '.repeat(i + 1)}a:`).join('\n'),
    'mappings, one space a level': Array.from({ length: 2300 }, (_, i) => `${' '.repeat(i + 1)}a:`).join('\n'),
    'lists of mappings': Array.from({ length: 2300 }, (_, i) => `${'  '.repeat(2 * i + 1)}- a:`).join('\n'),
    'compact lists on one line': `  ${'- '.repeat(2300)}a`,
  };
  it.each(Object.keys(shapes))('%s, 2,300 levels: validate, graph and run --offline say where, exit 2, no stack trace', async (shape) => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-deep-'));
    writeFileSync(join(dir, 'workflow.yml'), `${head}${shapes[shape]}\n`);
    for (const args of [
      ['validate', 'workflow.yml'],
      ['graph', 'workflow.yml'],
      ['run', 'workflow.yml', '--offline'],
    ]) {
      const r = await conclave(args, { cwd: dir, env: { ANTHROPIC_API_KEY: TEST_API_KEY } });
      expect(r.code, `${args[0]}: ${r.stderr.slice(0, 300)}`).toBe(2);
      expect(r.stdout + r.stderr).toMatch(/^workflow\.yml:\d+:\d+: (the file nests too deeply to read|x\.a\.a… is nested more than 64 levels deep)/m);
      expect(r.stdout + r.stderr).not.toMatch(/RangeError|internal error|\n\s+at /);
    }
  });
});
