import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { conclave, ROOT } from '../helpers/cli.js';

// Every file in test/corpus is a broken workflow whose trailing `# expect: LINE:COL: MESSAGE`
// comments list, in order, every diagnostic `conclave validate` must print for it.
const CORPUS = join(ROOT, 'test/corpus');
const files = readdirSync(CORPUS)
  .filter((f) => f.endsWith('.yml'))
  .sort();

interface Report {
  ok: boolean;
  files: { file: string; ok: boolean; diagnostics: { file: string; line: number; col: number; severity: string; message: string }[] }[];
}

function expectations(file: string): string[] {
  return readFileSync(join(CORPUS, file), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('# expect: '))
    .map((line) => line.slice('# expect: '.length));
}

describe('the broken-workflow corpus', () => {
  let code: number;
  let report: Report;

  beforeAll(async () => {
    const result = await conclave(['validate', '--json', ...files], { cwd: CORPUS });
    code = result.code;
    report = JSON.parse(result.stdout) as Report;
  });

  it('has at least 40 files, each with expectations', () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
    for (const file of files) expect(expectations(file), file).not.toEqual([]);
  });

  it('fails validation with exit code 2', () => {
    expect(code).toBe(2);
    expect(report.ok).toBe(false);
  });

  it.each(files)('%s gives exactly the expected diagnostics', (file) => {
    const entry = report.files.find((f) => f.file === file)!;
    expect(entry.ok).toBe(false);
    const actual = entry.diagnostics.map(
      (d) => `${d.file === file ? '' : `${d.file}:`}${d.line}:${d.col}: ${d.severity === 'warning' ? 'warning: ' : ''}${d.message}`,
    );
    expect(actual).toEqual(expectations(file));
  });

  it('prints file:line:col: message for a single file, and exits 2', async () => {
    const result = await conclave(['validate', 'graph-cycle.yml'], { cwd: CORPUS });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe(
      'graph-cycle.yml:4:35: reports_to forms a cycle: a → b → a\n' +
        'graph-cycle.yml:6:3: agent "w" cannot be reached from the lead "lead": it reports to "a", which does not answer to the lead\n',
    );
    expect(result.stderr).toBe('');
  });
});
