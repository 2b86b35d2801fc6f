import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * What `npm pack` ships (issue 67): the command-line tool whole, and no half of the Action (its
 * action.yml names action/main.js, which the package does not carry: the Action is used from the
 * repository, `uses: OWNER/conclave@v0`).
 */
describe('the npm package', () => {
  it('holds the CLI, its bundle, the generated validator and the schema, and no action.yml without its entry', () => {
    const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' })) as {
      files: { path: string }[];
    }[];
    const files = pack!.files.map((f) => f.path);
    for (const needed of ['bin/conclave.js', 'dist/conclave.js', 'schemas/workflow.schema.json', 'package.json']) expect(files, needed).toContain(needed);
    expect(files.some((f) => f.startsWith('generated/'))).toBe(true);
    if (files.includes('action.yml')) expect(files).toContain('action/main.js');
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
  }, 60_000);
});
