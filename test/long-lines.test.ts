import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/cli.js';

/** scripts/long-lines.js, part of `npm run lint`, on a src/ of its own. */
function lint(files: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-long-'));
  mkdirSync(join(dir, 'src', 'engine'), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'src', name), text);
  return new Promise((done) =>
    execFile(process.execPath, [join(ROOT, 'scripts/long-lines.js')], { cwd: dir }, (e, _stdout, stderr) =>
      done({ code: e ? Number(e.code ?? 1) : 0, stderr }),
    ),
  );
}

const lines = (n: number, width = 10) => `${'x'.repeat(width)}\n`.repeat(n);

describe('npm run lint: lines of 160 characters, files of 300 lines', () => {
  it('fails on a file of 301 lines and on a line of 161 characters, naming each', async () => {
    const result = await lint({ 'engine/run.ts': lines(301), 'wide.ts': lines(1, 161) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('src/engine/run.ts: 301 lines, over 300: split it by concept');
    expect(result.stderr).toContain('src/wide.ts:1: 161 characters');
    expect(result.stderr).toContain('2 places of src/ too long');
  });

  it('lets a file of 300 lines of 160 characters stand, with or without a last newline', async () => {
    const result = await lint({ 'engine/run.ts': lines(300, 160), 'last.ts': lines(300).trimEnd() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});
