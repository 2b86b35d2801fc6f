import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conclave, NODE, ROOT } from '../helpers/cli.js';

const examples = ['examples/issue-triage.yml', 'examples/migration-plan.yml', 'examples/pr-review.yml', 'examples/release-notes.yml'];

describe("the start's compile cache", () => {
  it("keeps the compiled code in the user's cache directory on Node 22 and later, and starts without one it cannot write", async () => {
    const major = Number(execFileSync(NODE, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }));
    const home = mkdtempSync(join(tmpdir(), 'conclave-cache-home-'));
    const env = { XDG_CACHE_HOME: home, NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined };
    expect((await conclave(['validate', 'examples/pr-review.yml'], { env })).code).toBe(0);
    const dir = join(home, 'conclave', 'compile-cache');
    if (major >= 22) expect(readdirSync(dir).length, `${NODE} (Node ${major}) kept no compiled code`).toBeGreaterThan(0);
    else expect(existsSync(dir), `Node ${major} has no compile cache`).toBe(false);
    // The second start reads what the first kept.
    expect((await conclave(['validate', 'examples/pr-review.yml'], { env })).code).toBe(0);

    const file = join(home, 'a-file');
    writeFileSync(file, '');
    const unwritable = await conclave(['validate', 'examples/pr-review.yml'], { env: { ...env, XDG_CACHE_HOME: file } });
    expect(unwritable.code).toBe(0);
    expect(unwritable.stderr).toBe('');
  });
});

describe('conclave validate', () => {
  it('accepts every example', async () => {
    const result = await conclave(['validate', ...examples]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // The one warning: the migration plan is run in the repository that holds its MIGRATION.md, not this one.
    const lines = result.stdout.split('\n');
    expect(lines.filter((l) => l.includes(': warning: '))).toEqual([
      expect.stringMatching(/^examples\/migration-plan\.yml:\d+:\d+: warning: documents\.plan\.file "MIGRATION\.md" does not exist in the current directory/),
    ]);
    expect(lines.filter((l) => !l.includes(': warning: ')).join('\n')).toBe(`${examples.map((e) => `${e}: ok`).join('\n')}\n4 files: 4 valid, 0 with errors\n`);
  });

  it('lists the errors of every file, not only the first file with errors', async () => {
    const result = await conclave(['validate', 'test/corpus/top-bad-name.yml', 'examples/pr-review.yml', 'test/corpus/graph-no-manager.yml']);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('test/corpus/top-bad-name.yml:1:7: name must be');
    expect(result.stdout).toContain('examples/pr-review.yml: ok');
    expect(result.stdout).toContain('test/corpus/graph-no-manager.yml:2:1: a team of 2 agents needs a manager');
    expect(result.stdout).toContain('3 files: 1 valid, 2 with errors');
  });

  it('says plainly when a file cannot be read', async () => {
    const result = await conclave(['validate', 'no/such/workflow.yml']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('conclave: cannot read no/such/workflow.yml: no such file\n');
    expect(result.stderr).not.toMatch(/at .*\.js/);
  });

  it('reports an unreadable file in --json too', async () => {
    const result = await conclave(['validate', '--json', 'missing.yml']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toEqual({
      ok: false,
      files: [{ file: 'missing.yml', ok: false, error: 'cannot read missing.yml: no such file', diagnostics: [] }],
    });
  });
});

describe('conclave graph', () => {
  it('prints the team as Mermaid', async () => {
    const result = await conclave(['graph', 'examples/pr-review.yml']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      [
        'flowchart TD',
        '  agent_lead["lead (manager, the lead)<br/>Owns the review and the final verdict"]',
        '  agent_security["security (worker)<br/>Looks for security problems only"]',
        '  agent_style["style (worker)<br/>Checks naming and structure"]',
        '  agent_lead --> agent_security',
        '  agent_lead --> agent_style',
        '',
      ].join('\n'),
    );
  });

  it('prints the team as JSON', async () => {
    const result = await conclave(['graph', '--format', 'json', 'examples/release-notes.yml']);
    expect(result.code).toBe(0);
    const graph = JSON.parse(result.stdout);
    expect(graph.lead).toBe('editor');
    expect(graph.agents.map((a: { name: string; reports_to: string | null }) => [a.name, a.reports_to])).toEqual([
      ['editor', null],
      ['writer', 'editor'],
      ['checker', 'editor'],
    ]);
    expect(graph.agents[2]).toMatchObject({ role: 'worker', model: 'claude-sonnet-5-5', tools: ['grep'] });
  });

  it('shows for_each counts, batch, the shared context and the documents with their owners, as Mermaid and as JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-graph-'));
    writeFileSync(
      join(dir, 'w.yml'),
      [
        'name: g',
        'defaults: { batch: true }',
        'context: The change under review.',
        'agents:',
        '  lead: { role: manager, batch: false }',
        '  reviewer: { role: worker, for_each: [a, b, c] }',
        'documents:',
        '  plan: { owner: lead, text: "1. Freeze", write_to: PLAN.md }',
        '  notes: { owner: lead, mode: append }',
        'kickoff: "@lead go"',
      ].join('\n'),
    );
    const chart = await conclave(['graph', join(dir, 'w.yml')]);
    expect(chart.code, chart.stderr).toBe(0);
    expect(chart.stdout).toContain('agent_lead["lead (manager, the lead)"]');
    expect(chart.stdout).toContain('agent_reviewer["reviewer (worker, × 3, batch)"]');
    expect(chart.stdout).toContain('document_0[/"plan (document, written to PLAN.md)"/]\n  agent_lead -- owns --- document_0');
    expect(chart.stdout).toContain('document_1[/"notes (document, append)"/]');
    expect(chart.stdout).toContain('context[("context: shared by every agent, read from the prompt cache")]');
    const json = JSON.parse((await conclave(['graph', '--format', 'json', join(dir, 'w.yml')])).stdout);
    expect(json.context).toBe(true);
    expect(json.agents.map((a: { for_each: unknown; batch: boolean }) => [a.for_each, a.batch])).toEqual([
      [null, false],
      [3, true],
    ]);
    expect(json.documents).toEqual([
      { name: 'plan', owner: 'lead', mode: 'edit', write_to: 'PLAN.md' },
      { name: 'notes', owner: 'lead', mode: 'append', write_to: null },
    ]);
  });

  it('refuses an invalid workflow with its diagnostics and exit 2', async () => {
    const result = await conclave(['graph', 'test/corpus/graph-cycle.yml']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('test/corpus/graph-cycle.yml:4:35: reports_to forms a cycle: a → b → a');
  });

  it('rejects an unknown format as a usage error', async () => {
    const result = await conclave(['graph', '--format', 'dot', 'examples/pr-review.yml']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("option '--format <format>' argument 'dot' is invalid");
  });
});

describe('the package', () => {
  it('installs no native module: three small dependencies, the SQLite adapter an optional peer for Node 20', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['diff', 'keyv', 'node-diff3']);
    expect(pkg.optionalDependencies).toBeUndefined();
    expect(pkg.peerDependencies).toEqual({ '@keyv/sqlite': expect.any(String) });
    expect(pkg.peerDependenciesMeta).toEqual({ '@keyv/sqlite': { optional: true } });
    // The lock agrees: nothing but those three (and keyv's own) is installed with the package.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const installed = Object.entries(lock.packages as Record<string, { dev?: boolean; peer?: boolean }>)
      .filter(([path, p]) => path !== '' && !p.dev && !p.peer)
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    expect(installed).toEqual(expect.arrayContaining(['diff', 'keyv', 'node-diff3']));
    expect(
      installed.every((name) => ['diff', 'keyv', 'node-diff3', '@keyv/serialize', 'hookified', 'hashery'].includes(name)),
      installed.join(', '),
    ).toBe(true);
  });
});

describe('conclave itself', () => {
  it('prints help with every command', async () => {
    const result = await conclave(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: conclave/);
    expect(result.stdout).toMatch(/validate/);
    expect(result.stdout).toMatch(/graph/);
  });

  it('prints the version from package.json', async () => {
    const { version } = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8'));
    const result = await conclave(['--version']);
    expect(result).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('treats an unknown command as a usage error (exit 2)', async () => {
    const result = await conclave(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("conclave: unknown command 'frobnicate'");
  });
});
