// Records the examples' sessions (examples/NAME.session.jsonl) that their tests (NAME.test.yml)
// replay: each example run by `conclave test --live --update` against conclave's test server
// (test/fake-anthropic) with the scripted team of test/fixtures/examples-demo.ts, in a throwaway
// repository made for it (a branch that adds a SQL injection, a tagged history, a `gh` that
// answers as GitHub's, a migration plan). The recording is kept only when its case passes. Run it
// again after changing an example: `node scripts/record-examples.js [NAME…]`.
// (examples/pr-review.session.jsonl has its own: scripts/record-demo.js.)
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSource } from '../bench/load-source.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const { startFakeAnthropic } = await loadSource('test/fake-anthropic/server.ts');
const demo = await loadSource('test/fixtures/examples-demo.ts');

/** A throwaway git repository with a `main` (as origin/main) and a branch on top. */
function repository() {
  const repo = mkdtempSync(join(tmpdir(), 'conclave-examples-'));
  const git = (...args) => execFileSync('git', ['-c', 'user.name=demo', '-c', 'user.email=demo@example.com', ...args], { cwd: repo, stdio: 'pipe' });
  mkdirSync(join(repo, 'src'));
  writeFileSync(join(repo, 'src/users.js'), "export async function getUser(db, id) {\n  return db.query('SELECT * FROM users WHERE id = $1', [id]);\n}\n");
  writeFileSync(join(repo, 'src/format.js'), "export function fullName(u) {\n  return u.first + ' ' + u.last;\n}\n");
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-qm', 'users and format');
  git('tag', 'v2.3.0');
  git('update-ref', 'refs/remotes/origin/main', 'HEAD');
  writeFileSync(join(repo, 'src/users.js'), "export async function getUser(db, name) {\n  return db.query(`SELECT * FROM users WHERE name = '${name}'`);\n}\n");
  git('commit', '-qam', 'Add CSV export');
  writeFileSync(join(repo, 'src/format.js'), 'export function fullName(u) {\n  return `${u.first} ${u.last}`;\n}\n');
  git('commit', '-qam', 'Fix: keep empty lines in the importer');
  cpSync(join(root, 'examples'), join(repo, 'examples'), { recursive: true, filter: (source) => !source.endsWith('.session.jsonl') });
  return repo;
}

/** A `gh` that answers the two questions issue-triage's setup asks, as GitHub's CLI would. */
function fakeGh(repo) {
  const bin = join(repo, '.bin');
  mkdirSync(bin);
  const issue = {
    title: 'Export crashes on an empty project',
    body: 'Exporting a project with no rows: "cannot read rows of undefined".',
    labels: [],
    comments: [],
  };
  const labels = [
    { name: 'bug', description: 'Something is broken' },
    { name: 'export', description: 'Exporting projects' },
    { name: 'question', description: 'Not a bug' },
  ];
  writeFileSync(join(bin, 'gh'), `#!/bin/sh\nif [ "$1" = issue ]; then echo '${JSON.stringify(issue)}'; else echo '${JSON.stringify(labels)}'; fi\n`);
  chmodSync(join(bin, 'gh'), 0o755);
  return bin;
}

const EXAMPLES = {
  'issue-triage': { script: demo.ISSUE_TRIAGE, prepare: (repo) => ({ PATH: `${fakeGh(repo)}:${process.env.PATH}` }) },
  'release-notes': { script: demo.RELEASE_NOTES },
  'review-each-file': { script: demo.REVIEW_EACH_FILE },
  'review-per-file': { script: demo.REVIEW_PER_FILE },
  'migration-plan': { script: demo.MIGRATION_PLAN, prepare: (repo) => (writeFileSync(join(repo, 'MIGRATION.md'), demo.MIGRATION), {}) },
};

const NOTE =
  "recorded against conclave's test server (test/fake-anthropic), not the real API: the agents' answers are scripted (test/fixtures/examples-demo.ts)";

for (const name of process.argv.length > 2 ? process.argv.slice(2) : Object.keys(EXAMPLES)) {
  const example = EXAMPLES[name];
  if (!example) throw new Error(`no example ${name}: ${Object.keys(EXAMPLES).join(', ')}`);
  const repo = repository();
  const env = example.prepare?.(repo) ?? {};
  const server = await startFakeAnthropic(example.script);
  try {
    // Not execFileSync: the test server answers from this process, which must stay free to run.
    const child = spawn(process.execPath, [join(root, 'bin/conclave.js'), 'test', '--live', '--update', `examples/${name}.test.yml`], {
      cwd: repo,
      env: { ...process.env, ...env, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-ant-test-demo', GITHUB_ACTIONS: '' },
      stdio: 'inherit',
    });
    const code = await new Promise((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`the recorded run of ${name} did not pass its test (exit ${code})`);
  } finally {
    await server.close();
  }
  const session = `examples/${name}.session.jsonl`;
  const lines = readFileSync(join(repo, session), 'utf8').split('\n');
  const header = JSON.parse(lines[0]);
  header.note = NOTE;
  lines[0] = JSON.stringify(header);
  writeFileSync(join(root, session), lines.join('\n'));
  console.log(`wrote ${session}`);
}
