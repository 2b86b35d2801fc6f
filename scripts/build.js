// Builds the CLI: the schema's standalone validator, a type check, then one bundle per command.
// The bundle is what keeps start-up fast: yaml and commander alone are ~80 small files to resolve.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { build } from 'rolldown';
import { commandChunks } from './command-chunks.js';

const root = new URL('../', import.meta.url);
execFileSync(process.execPath, [new URL('scripts/compile-schema.js', root).pathname], { stdio: 'inherit' });
execFileSync(process.execPath, [new URL('node_modules/typescript/bin/tsc', root).pathname, '-p', 'tsconfig.json', '--noEmit'], {
  stdio: 'inherit',
  cwd: root,
});
rmSync(new URL('dist/', root), { recursive: true, force: true });
const resolving = {
  platform: 'node',
  // yaml's ESM build (the one it gives browsers) is the same code as its CommonJS build, but the
  // bundler can drop what is unused and skip CommonJS wrappers: ~20 ms less at every start.
  resolve: { alias: { yaml: new URL('node_modules/yaml/browser/index.js', root).pathname } },
  // The response cache's store: keyv with a native SQLite binding, or an adapter the user installs.
  external: [/^keyv$/, /^@keyv\//, /^sqlite3$/, /^pg-native$/],
};

const codeSplitting = {
  groups: [
    // What every command loads at its start. The entry itself stays out: its top-level await waits
    // for the commands' chunks, which import this one.
    { name: 'start', tags: ['$initial'], test: (id) => !id.endsWith('/src/cli/main.ts') },
    ...(await commandChunks(root, resolving)),
  ],
};
const options = (input, groups = false) => ({
  ...resolving,
  input,
  logLevel: 'warn',
  output: {
    ...(groups ? { codeSplitting } : {}),
    dir: new URL('dist/', root).pathname,
    format: 'esm',
    // CONCLAVE_NOMINIFY=1 keeps names readable in a CPU profile (docs/BENCHMARKS.md: how to profile).
    minify: process.env.CONCLAVE_NOMINIFY !== '1',
    // Non-ASCII characters escaped: V8 keeps an ASCII source as one byte a character, and Node's compile
    // cache hashes it without converting it to UTF-8 first (~3 ms of every start; docs/BENCHMARKS.md).
    charset: 'ascii',
    // Source maps only when asked for (CONCLAVE_SOURCEMAPS=1): the package ships none.
    sourcemap: process.env.CONCLAVE_SOURCEMAPS === '1',
    entryFileNames: '[name].js',
    chunkFileNames: 'chunks/[name]-[hash].js',
  },
});
await build(options({ conclave: new URL('src/cli/main.ts', root).pathname }, true));
// grep's search and the check of typed outputs run in worker threads (so that their deadlines
// hold): each worker is a file of its own.
await build(options({ 'grep-worker': new URL('src/agents/tools/grep-worker.ts', root).pathname }));
await build(options({ 'outputs-worker': new URL('src/agents/tools/outputs-worker.ts', root).pathname }));
