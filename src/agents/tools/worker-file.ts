import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A worker's bundled file (`NAME.js`), beside the bundle's entry or its chunk; undefined when this build has none. */
export function bundledWorker(name: string, base: string): string | undefined {
  return [`./${name}.js`, `../${name}.js`].map((p) => fileURLToPath(new URL(p, base))).find((f) => existsSync(f));
}
