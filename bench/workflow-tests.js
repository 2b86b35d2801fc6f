// `conclave test examples/` offline against its floor: the same cases as bare replays
// (`conclave run WORKFLOW --replay RECORDING`, one after another), each the median of 3,
// alternated in one sitting. What conclave test adds to a replay: reading the test files and
// recordings, checking the expectations, the report.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('../', import.meta.url));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const env = { ...process.env, ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', GITHUB_ACTIONS: '' };

function timed(args) {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, [join(root, 'bin/conclave.js'), ...args], { cwd: root, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`conclave ${args.join(' ')} exited with ${result.status}: ${result.stderr}`);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export function workflowTests(rounds = 3) {
  const cases = readdirSync(join(root, 'examples'))
    .filter((f) => f.endsWith('.test.yml'))
    .flatMap((f) => {
      const test = parse(readFileSync(join(root, 'examples', f), 'utf8'));
      return test.cases.map((c) => ({ workflow: join('examples', test.workflow), session: join('examples', c.session), inputs: c.inputs ?? {} }));
    });
  const tests = [];
  const replays = [];
  for (let i = 0; i < rounds; i++) {
    tests.push(timed(['test', 'examples/']));
    const scratch = mkdtempSync(join(tmpdir(), 'conclave-bench-replay-'));
    replays.push(
      cases.reduce((sum, c, n) => {
        const inputs = Object.entries(c.inputs).flatMap(([k, v]) => ['-i', `${k}=${v}`]);
        return sum + timed(['run', c.workflow, '--replay', c.session, '--json', '--session', join(scratch, `${n}.jsonl`), ...inputs]);
      }, 0),
    );
  }
  return { cases: cases.length, testMs: median(tests), replaysMs: median(replays) };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(workflowTests());
