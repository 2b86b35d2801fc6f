import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain script of the repository, with no types of its own
import { layerFigures, roomFigures, withFigures, withRooms } from '../scripts/architecture-figures.js';
// @ts-expect-error: a plain script of the repository, with no types of its own
import { walkFigures, withWalks } from '../scripts/walks.js';
import { ROOT } from './helpers/cli.js';

/** docs/ARCHITECTURE.md's picture gives each layer's files and lines as src/ has them (node scripts/architecture-figures.js writes them). */
describe('the layer figures in docs/ARCHITECTURE.md', () => {
  it('are what src/ counts now', () => {
    const page = readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');
    const figures = layerFigures(join(ROOT, 'src')) as Record<string, { files: number; lines: number }>;
    expect(Object.keys(figures).sort()).toEqual(['agents', 'channel', 'cli', 'engine', 'provider', 'report', 'session', 'trace', 'workers', 'workflow']);
    expect(page, 'run node scripts/architecture-figures.js').toBe(withFigures(page, figures));
  });

  it('are rewritten where they stand, the rest of the page left as it is', () => {
    const page = 'The picture today:\n```\n  cli  (1 files, 2 lines)  ──▶ trace (3 files, 4 lines: reads)\n  engine (5, 6) — text (7, 8)\n```\nafter (9, 10)\n';
    const figures = { cli: { files: 37, lines: 3523 }, trace: { files: 4, lines: 443 }, engine: { files: 45, lines: 4597 } };
    expect(withFigures(page, figures)).toBe(
      'The picture today:\n```\n  cli  (37 files, 3,523 lines)  ──▶ trace (4 files, 443 lines: reads)\n  engine (45, 4,597) — text (7, 8)\n```\nafter (9, 10)\n',
    );
  });

  it('the rooms table is what src/ counts now, and no folder of src/ holds more than 25 files directly (issue 80)', () => {
    const page = readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');
    const rows = roomFigures(join(ROOT, 'src')) as { room: string; files: number }[];
    expect(rows.map((r) => r.room)).toContain('cli/test/');
    expect(page, 'run node scripts/architecture-figures.js').toBe(withRooms(page, rows));
    const wide = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(d.parentPath, d.name))
      .concat(join(ROOT, 'src'))
      .filter((dir) => readdirSync(dir).filter((f) => f.endsWith('.ts')).length > 25);
    expect(wide).toEqual([]);
  });

  it('the walks table is what the checker follows in src/ now (node scripts/walks.js writes it)', () => {
    const page = readFileSync(join(ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');
    const rows = walkFigures(ROOT) as { name: string; stops: number; climbs: number }[];
    expect(rows.map((r) => r.name)).toEqual(["executeRun's options", "the estimate command's options", "runCommand's options"]);
    for (const row of rows) expect(row.stops).toBeGreaterThan(row.climbs);
    expect(page, 'run node scripts/walks.js').toBe(withWalks(page, rows));
  }, 120_000);
});
