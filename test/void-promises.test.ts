import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/cli.js';

/** scripts/void-promises.js, part of `npm run lint`, on a project of its own: a promise let go with `void` fails it. */
function lint(files: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-void-'));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext' }, include: ['src'] }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, 'src', name), text);
  return new Promise((done) =>
    execFile(process.execPath, [join(ROOT, 'scripts/void-promises.js')], { cwd: dir }, (e, _stdout, stderr) =>
      done({ code: e ? Number(e.code ?? 1) : 0, stderr }),
    ),
  );
}

describe('npm run lint: no promise let go with void', () => {
  it('fails on a promise that void hides, naming where', async () => {
    const result = await lint({
      'turn.ts': 'async function later(): Promise<number> { return 1; }\nexport function go(): void {\n  void later();\n}\n',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('src/turn.ts:3: void later()');
    expect(result.stderr).toContain('1 promise let go with void in src/: await it, or hand it to detached()');
  });

  it('lets void stand where it holds no promise, and a promise handed to detached()', async () => {
    const result = await lint({
      'detached.ts': 'export function detached(p: Promise<unknown>, onFailure: (e: unknown) => void): void {\n  void p.then(undefined, onFailure);\n}\n',
      'ok.ts':
        "import { detached } from './detached.js';\nconst seen = new Set<string>();\nexport function drop(x: string): void {\n  return void seen.delete(x);\n}\n" +
        'export function go(): void {\n  detached(Promise.resolve(1), () => {});\n}\n',
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});
