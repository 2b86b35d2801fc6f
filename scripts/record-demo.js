// Records examples/pr-review.session.jsonl: examples/pr-review.yml run against conclave's test
// server (test/fake-anthropic) with the scripted review of test/fixtures/pr-review-demo.ts, in a
// throwaway git repository whose branch adds a SQL injection. Run it again after changing the
// example's prompts: `node scripts/record-demo.js`.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from '../bench/load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const { PR_REVIEW_DEMO } = await loadSource('test/fixtures/pr-review-demo.ts');

const repo = mkdtempSync(join(tmpdir(), 'conclave-demo-'));
const git = (...args) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
mkdirSync(join(repo, 'src'));
writeFileSync(join(repo, 'src/users.js'), "export async function getUser(db, id) {\n  return db.query('SELECT * FROM users WHERE id = $1', [id]);\n}\n");
git('init', '-q', '-b', 'main');
git('-c', 'user.name=demo', '-c', 'user.email=demo@example.com', 'commit', '-qm', 'base', '--allow-empty');
git('add', '.');
git('-c', 'user.name=demo', '-c', 'user.email=demo@example.com', 'commit', '-qm', 'users');
git('update-ref', 'refs/remotes/origin/main', 'HEAD');
writeFileSync(
  join(repo, 'src/users.js'),
  "export async function getUsr(db, name) {\n  const rows = await db.query(`SELECT * FROM users WHERE name = '${name}'`);\n  return rows[0];\n}\n\nexport function fmt(u) { return u.first + ' ' + u.last; }\n",
);
git('-c', 'user.name=demo', '-c', 'user.email=demo@example.com', 'commit', '-qam', 'Look users up by name');
cpSync(join(root, 'examples'), join(repo, 'examples'), { recursive: true, filter: (source) => !source.endsWith('.session.jsonl') });

const server = await startFakeAnthropic(PR_REVIEW_DEMO);
const session = 'examples/pr-review.session.jsonl';
try {
  // Not execFileSync: the test server answers from this process, which must stay free to run.
  const child = spawn(process.execPath, [join(root, 'bin/conclave.js'), 'run', 'examples/pr-review.yml', '-i', 'pr=42', '--session', session], {
    cwd: repo,
    env: { ...process.env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-demo' },
    stdio: 'inherit',
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`the recorded run exited with ${code}`);
} finally {
  await server.close();
}
const lines = readFileSync(join(repo, session), 'utf8').split('\n');
const header = JSON.parse(lines[0]);
header.note =
  "recorded against conclave's test server (test/fake-anthropic), not the real API: the agents' answers are scripted (test/fixtures/pr-review-demo.ts)";
lines[0] = JSON.stringify(header);
writeFileSync(join(root, session), lines.join('\n'));
console.log(`wrote ${session}`);
