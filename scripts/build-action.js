// Builds the GitHub Action's committed bundle, action/: the Action's entry (main.js), the whole
// CLI (conclave.js) and its workers (grep, typed outputs), with every dependency inside, so that
// `uses: owner/conclave@v1` installs and builds nothing before conclave starts (DESIGN §12).
// Run it after changing src/ (`npm run build:action`) and commit action/: a test fails while the
// committed bundle differs from a fresh build.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';
import { commandChunks } from './command-chunks.js';

const root = new URL('../', import.meta.url);
const path = (p) => fileURLToPath(new URL(p, root));

export async function buildAction(dir) {
  rmSync(dir, { recursive: true, force: true });
  const resolving = {
    platform: 'node',
    resolve: { alias: { yaml: path('node_modules/yaml/browser/index.js') } },
    // The cache stores' drivers: found in the user's project when a workflow asks for a cache.
    external: [/^@keyv\/(sqlite|redis|postgres)$/, /^sqlite3$/, /^pg-native$/],
  };
  const options = (input, groups = []) => ({
    ...resolving,
    input,
    logLevel: 'warn',
    // As the CLI's own build (scripts/build.js): ASCII only, so V8 keeps each source one byte a character.
    output: {
      dir,
      format: 'esm',
      minify: true,
      charset: 'ascii',
      entryFileNames: '[name].js',
      chunkFileNames: 'chunks/[name]-[hash].js',
      ...(groups.length ? { codeSplitting: { groups } } : {}),
    },
  });
  // The step's own process (main.js) and the run it starts (conclave.js) load the commands' chunks as the CLI does.
  await build(options({ main: path('src/cli/action/action.ts'), conclave: path('src/cli/main.ts') }, await commandChunks(root, resolving)));
  await build(options({ 'grep-worker': path('src/agents/tools/grep-worker.ts') }));
  await build(options({ 'outputs-worker': path('src/agents/tools/outputs-worker.ts') }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildAction(path('action/'));
