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

const ROOMS_START = '<!-- rooms: counted by scripts/architecture-figures.js -->';
const ROOMS_END = '<!-- end of rooms -->';

/** Each room (a folder inside a layer) and each layer's own top folder: its files and lines, directly in it. */
export function roomFigures(src = join(ROOT, 'src')) {
  const rows = [];
  const count = (dir) => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    return { files: files.length, lines: files.reduce((k, f) => k + readFileSync(join(dir, f), 'utf8').split('\n').length - 1, 0) };
  };
  for (const layer of readdirSync(src, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    const rooms = readdirSync(join(src, layer.name), { withFileTypes: true }).filter((d) => d.isDirectory());
    if (rooms.length === 0) continue;
    rows.push({ room: `${layer.name}/`, ...count(join(src, layer.name)) });
    for (const room of rooms) rows.push({ room: `${layer.name}/${room.name}/`, ...count(join(src, layer.name, room.name)) });
  }
  return rows;
}

/** The page with the rooms' table between its markers, as counted. */
export function withRooms(page, rows) {
  const start = page.indexOf(ROOMS_START);
  const end = page.indexOf(ROOMS_END);
  if (start === -1 || end === -1) return page;
  const table = ['| folder | files | lines |', '|---|---|---|', ...rows.map((r) => `| \`${r.room}\` | ${r.files} | ${n(r.lines)} |`)].join('\n');
  return `${page.slice(0, start + ROOMS_START.length)}\n${table}\n${page.slice(end)}`;
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const page = readFileSync(PAGE, 'utf8');
  const next = withRooms(withFigures(page, layerFigures()), roomFigures());
  if (next !== page) writeFileSync(PAGE, next);
  process.stdout.write(next === page ? 'docs/ARCHITECTURE.md: the figures are current\n' : 'docs/ARCHITECTURE.md: figures rewritten\n');
}
