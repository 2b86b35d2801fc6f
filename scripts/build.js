// Builds the CLI: the schema's standalone validator, a type check, then one bundle per command.
// The bundle is what keeps start-up fast: yaml and commander alone are ~80 small files to resolve.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { build } from 'rolldown';

const root = new URL('../', import.meta.url);
execFileSync(process.execPath, [new URL('scripts/compile-schema.js', root).pathname], { stdio: 'inherit' });
execFileSync(process.execPath, [new URL('node_modules/typescript/bin/tsc', root).pathname, '-p', 'tsconfig.json', '--noEmit'], {
  stdio: 'inherit',
  cwd: root,
});
rmSync(new URL('dist/', root), { recursive: true, force: true });
const options = (input) => ({
  input,
  platform: 'node',
  logLevel: 'warn',
  // yaml's ESM build (the one it gives browsers) is the same code as its CommonJS build, but the
  // bundler can drop what is unused and skip CommonJS wrappers: ~20 ms less at every start.
  resolve: { alias: { yaml: new URL('node_modules/yaml/browser/index.js', root).pathname } },
  // The response cache's store: keyv with a native SQLite binding, or an adapter the user installs.
  external: [/^keyv$/, /^@keyv\//, /^sqlite3$/, /^pg-native$/],
  output: {
    dir: new URL('dist/', root).pathname,
    format: 'esm',
    // CONCLAVE_NOMINIFY=1 keeps names readable in a CPU profile (docs/BENCHMARKS.md: how to profile).
    minify: process.env.CONCLAVE_NOMINIFY !== '1',
    // Source maps only when asked for (CONCLAVE_SOURCEMAPS=1): the package ships none.
    sourcemap: process.env.CONCLAVE_SOURCEMAPS === '1',
    entryFileNames: '[name].js',
    chunkFileNames: 'chunks/[name]-[hash].js',
  },
});
await build(options({ conclave: new URL('src/cli/main.ts', root).pathname }));
// grep's search and the check of typed outputs run in worker threads (so that their deadlines
// hold): each worker is a file of its own.
await build(options({ 'grep-worker': new URL('src/agents/tools/grep-worker.ts', root).pathname }));
await build(options({ 'outputs-worker': new URL('src/agents/tools/outputs-worker.ts', root).pathname }));
