import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What dist/ is built from: the sources, the schema, the build scripts and the installed packages. */
const INPUTS = ['src', 'schemas', 'scripts', 'package.json', 'package-lock.json', 'node_modules/.package-lock.json'];

/** Every file below `dir`. */
export function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    try {
      return statSync(path).isDirectory() ? walk(path) : [path];
    } catch {
      return [];
    }
  });
}

/** Whether dist/ is older than anything it is built from (or missing). */
export function buildIsStale(): boolean {
  const built = join(ROOT, 'dist', 'conclave.js');
  if (!existsSync(built)) return true;
  const newest = Math.max(
    ...INPUTS.map((p) => join(ROOT, p))
      .filter((path) => existsSync(path))
      .flatMap((path) => (statSync(path).isDirectory() ? walk(path) : [path]))
      .map((f) => statSync(f).mtimeMs),
  );
  return statSync(built).mtimeMs < newest;
}
