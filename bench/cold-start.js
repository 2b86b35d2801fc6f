// Cold start of the CLI against a bare `node -e 0`, as the median of many runs of each,
// interleaved so that machine noise falls on all of them alike; on any Node given (the bench runs
// it on the Node it runs on and on Node 24). Beside them, the floors: commander and yaml alone,
// bundled, parsing the same file (bench/floor-cli.js), as ESM, as CommonJS and from a start
// snapshot; yaml alone (bench/floor-yaml.js); and an empty start snapshot. What validate cannot
// start faster than, however it is built (docs/BENCHMARKS.md).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = fileURLToPath(new URL('../', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 21);

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** A floor's bundle, built as conclave's is (yaml's ESM build, minified, one file), as ESM or CommonJS. */
export async function floorBundle(name, format = 'esm') {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-floor-'));
  const file = `${name}.${format === 'esm' ? 'mjs' : 'cjs'}`;
  await build({
    input: { [name]: join(root, `bench/${name}.js`) },
    platform: 'node',
    logLevel: 'silent',
    resolve: { alias: { yaml: join(root, 'node_modules/yaml/browser/index.js') } },
    output: { dir, format, minify: true, charset: 'ascii', codeSplitting: false, entryFileNames: file },
  });
  return join(dir, file);
}

/** A start snapshot of `script` (CommonJS, one file) for `node`: a snapshot holds only what one Node version can read. */
function startSnapshot(node, script) {
  const blob = join(mkdtempSync(join(tmpdir(), 'conclave-snapshot-')), 'start.blob');
  const built = spawnSync(node, ['--snapshot-blob', blob, '--build-snapshot', script], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`building a start snapshot of ${script} failed: ${built.stderr}`);
  return blob;
}

export async function coldStart(node = process.execPath) {
  const floor = await floorBundle('floor-cli', 'cjs');
  const empty = join(mkdtempSync(join(tmpdir(), 'conclave-snapshot-')), 'empty.cjs');
  writeFileSync(empty, "require('node:v8').startupSnapshot.setDeserializeMainFunction(() => {});\n");
  const validate = ['validate', 'examples/pr-review.yml'];
  const commands = {
    'node -e 0': ['-e', '0'],
    'conclave --help': ['bin/conclave.js', '--help'],
    'conclave validate examples/pr-review.yml': ['bin/conclave.js', ...validate],
    'floor: commander + yaml parsing the same file, one bundle': [await floorBundle('floor-cli'), ...validate],
    'floor: the same as one CommonJS file': [floor, ...validate],
    'floor: the same from a start snapshot (--snapshot-blob)': ['--snapshot-blob', startSnapshot(node, floor), ...validate],
    'floor: yaml alone parsing the same file, one CommonJS file': [await floorBundle('floor-yaml', 'cjs'), ...validate],
    'floor: an empty start snapshot': ['--snapshot-blob', startSnapshot(node, empty)],
  };
  const times = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
  const order = Object.entries(commands);
  for (let i = 0; i < runs + 2; i++) {
    // Each round starts one command later: no command always follows the same one (a process's
    // exit, still being cleaned up, would fall on the start of the one after it).
    for (const [name, args] of [...order.slice(i % order.length), ...order.slice(0, i % order.length)]) {
      const start = process.hrtime.bigint();
      const result = spawnSync(node, args, { cwd: root, stdio: 'ignore' });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (result.status !== 0) throw new Error(`${name} exited with ${result.status}`);
      if (i >= 2) times[name].push(ms); // the first two runs warm the disk cache (and Node's compile cache)
    }
  }
  const base = median(times['node -e 0']);
  return Object.entries(times).map(([name, values]) => ({
    name,
    medianMs: Number(median(values).toFixed(1)),
    ratio: Number((median(values) / base).toFixed(2)),
  }));
}

/** A Node 24 to measure on too: CONCLAVE_BENCH_NODE24, or the one `npx node@24` keeps (no download). */
export function node24() {
  if (process.env.CONCLAVE_BENCH_NODE24) return process.env.CONCLAVE_BENCH_NODE24;
  const found = spawnSync('npx', ['--offline', '-y', 'node@24', '-p', 'process.execPath'], { encoding: 'utf8', timeout: 30_000 });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const node of [process.execPath, node24()].filter(Boolean)) {
    console.log(node);
    console.table(await coldStart(node));
  }
}
