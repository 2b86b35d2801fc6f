// `npm run lint`'s last part: no line of src/ over 160 characters, and no file over 300 lines
// (docs/ARCHITECTURE.md: one concept per file). The formatter keeps code under the width; a string
// or comment it cannot break is split by hand. A file that grows past 300 lines holds two concepts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const LIMIT = 160;
const FILE_LIMIT = 300;
const long = [];
for (const entry of readdirSync('src', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
  const path = join(entry.parentPath ?? entry.path, entry.name);
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, i) => {
    if (line.length > LIMIT) long.push(`${path}:${i + 1}: ${line.length} characters`);
  });
  const count = lines.at(-1) === '' ? lines.length - 1 : lines.length;
  if (count > FILE_LIMIT) long.push(`${path}: ${count} lines, over ${FILE_LIMIT}: split it by concept`);
}
for (const line of long) console.error(line);
if (long.length > 0) {
  console.error(`${long.length} place${long.length === 1 ? '' : 's'} of src/ too long (${LIMIT} characters a line, ${FILE_LIMIT} lines a file)`);
  process.exit(1);
}
