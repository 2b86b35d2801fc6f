import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/** The chunks a built chunk imports statically (`import … from "./x.js"`), and theirs, transitively. */
function staticClosure(dir: string, entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(join(dir, file), 'utf8');
    for (const m of code.matchAll(/(?:from|import)\s*"\.\/([^"]+)"/g)) visit(m[1]!);
  };
  visit(entry);
  return seen;
}

describe('the diff and merge libraries of documents', () => {
  it('are loaded only by a run whose workflow has documents: no chunk of run, show or validate imports them statically', () => {
    const dir = join(ROOT, 'dist', 'chunks');
    const chunks = readdirSync(dir);
    const merge = chunks.filter((c) => c.startsWith('merge-'));
    expect(merge).toHaveLength(1);
    // Our merge, with jsdiff and node-diff3 beside it.
    expect(readFileSync(join(dir, merge[0]!), 'utf8')).toContain('<<<<<<<');
    for (const entry of chunks.filter((c) => /^(run-workflow|show|load-checked)-/.test(c))) {
      expect(
        [...staticClosure(dir, entry)].filter((c) => c.startsWith('merge-')),
        entry,
      ).toEqual([]);
    }
    // …and it is imported when needed.
    expect(chunks.some((c) => readFileSync(join(dir, c), 'utf8').includes(`import(\`./${merge[0]}\`)`))).toBe(true);
  });
});
