// Cold start of the CLI against a bare `node -e 0`, as the median of many runs of each,
// interleaved so that machine noise falls on all three alike.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 21);
const commands = {
  'node -e 0': ['-e', '0'],
  'conclave --help': ['bin/conclave.js', '--help'],
  'conclave validate examples/pr-review.yml': ['bin/conclave.js', 'validate', 'examples/pr-review.yml'],
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export function coldStart() {
  const times = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
  for (let i = 0; i < runs + 2; i++) {
    for (const [name, args] of Object.entries(commands)) {
      const start = process.hrtime.bigint();
      const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'ignore' });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (result.status !== 0) throw new Error(`${name} exited with ${result.status}`);
      if (i >= 2) times[name].push(ms); // the first two runs warm the disk cache
    }
  }
  const base = median(times['node -e 0']);
  return Object.entries(times).map(([name, values]) => ({
    name,
    medianMs: Number(median(values).toFixed(1)),
    ratio: Number((median(values) / base).toFixed(2)),
  }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(coldStart());
}
