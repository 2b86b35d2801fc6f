// Bundles one module of src/ into a temporary folder and imports it, so that a benchmark
// measures the same compiled code the CLI runs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'rolldown';

export async function loadSource(path) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  await build({
    input: new URL(`../${path}`, import.meta.url).pathname,
    platform: 'node',
    logLevel: 'warn',
    output: { dir, format: 'esm', entryFileNames: 'module.js' },
  });
  return import(pathToFileURL(join(dir, 'module.js')).href);
}
