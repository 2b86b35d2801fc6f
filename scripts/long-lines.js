// `npm run lint`'s last part: no line of src/ over 160 characters. The formatter keeps code under
// it; a string or comment it cannot break is split by hand.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const LIMIT = 160;
const long = [];
for (const entry of readdirSync('src', { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
  const path = join(entry.parentPath ?? entry.path, entry.name);
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.length > LIMIT) long.push(`${path}:${i + 1}: ${line.length} characters`);
    });
}
for (const line of long) console.error(line);
if (long.length > 0) {
  console.error(`${long.length} line${long.length === 1 ? '' : 's'} of src/ over ${LIMIT} characters`);
  process.exit(1);
}
