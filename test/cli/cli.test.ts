import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { conclave, ROOT } from '../helpers/cli.js';

const examples = ['examples/issue-triage.yml', 'examples/pr-review.yml', 'examples/release-notes.yml'];

describe('conclave validate', () => {
  it('accepts every example', async () => {
    const result = await conclave(['validate', ...examples]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${examples.map((e) => `${e}: ok`).join('\n')}\n3 files: 3 valid, 0 with errors\n`);
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
