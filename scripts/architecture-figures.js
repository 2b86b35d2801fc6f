// The layer figures in docs/ARCHITECTURE.md's picture, counted from src/ (files and lines per
// layer), so that they cannot go stale: `node scripts/architecture-figures.js` rewrites them;
// test/architecture-figures.test.ts fails when the page differs from what it would write.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const PAGE = join(ROOT, 'docs', 'ARCHITECTURE.md');

/** Files and lines of each layer of src/. */
export function layerFigures(src = join(ROOT, 'src')) {
  const figures = {};
  for (const layer of readdirSync(src, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    const files = readdirSync(join(src, layer.name), { recursive: true }).filter((f) => f.endsWith('.ts'));
    const lines = files.reduce((n, f) => n + readFileSync(join(src, layer.name, f), 'utf8').split('\n').length - 1, 0);
    figures[layer.name] = { files: files.length, lines };
  }
  return figures;
}

const n = (x) => x.toLocaleString('en-US');

/** The page with each layer's figures in its picture as counted: `cli  (37 files, 3,523 lines)`, `engine (45, 4,597)`. */
export function withFigures(page, figures) {
  const start = page.indexOf('```\n', page.indexOf('The picture today'));
  const end = page.indexOf('```', start + 4);
  const picture = page.slice(start, end).replace(/\b([a-z]+)(\s+)\((\d[\d,]*)( files)?, (\d[\d,]*)( lines)?/g, (whole, layer, gap, _f, files, _l, lines) => {
    const f = figures[layer];
    return f ? `${layer}${gap}(${n(f.files)}${files ?? ''}, ${n(f.lines)}${lines ?? ''}` : whole;
  });
  return page.slice(0, start) + picture + page.slice(end);
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const page = readFileSync(PAGE, 'utf8');
  const next = withFigures(page, layerFigures());
  if (next !== page) writeFileSync(PAGE, next);
  process.stdout.write(next === page ? 'docs/ARCHITECTURE.md: the figures are current\n' : 'docs/ARCHITECTURE.md: figures rewritten\n');
}
