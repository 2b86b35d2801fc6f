import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { buildIsStale, walk } from './helpers/fresh-build.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Every value that a test hands conclave as a key or a secret. */
const SECRETS = ['sk-ant-test-0123456789abcdef', 'hunter2-secret-value', 'tok_9f8e7d6c5b4a'];

/**
 * Every test writes under one temporary folder (TMPDIR is set for the test workers); at the end,
 * every session file written by the suite is searched for the API key and the secret values.
 */
export default function setup() {
  buildIfStale();
  const root = mkdtempSync(join(tmpdir(), 'conclave-tests-'));
  process.env.TMPDIR = root;
  return () => {
    const sessions = walk(root).filter((f) => f.endsWith('.jsonl'));
    const leaks = sessions.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return SECRETS.filter((secret) => text.includes(secret)).map((secret) => `${file} holds ${secret}`);
    });
    const failure = leaks.length > 0 ? `secrets in session files:\n${leaks.join('\n')}` : undefined;
    if (failure) {
      // vitest reports an error thrown here but keeps its exit code: set it too.
      process.exitCode = 1;
      throw new Error(failure);
    }
    process.stdout.write(`secret sweep: ${sessions.length} session files hold no API key or secret value\n`);
    rmSync(root, { recursive: true, force: true });
  };
}

/**
 * The end-to-end tests run the built CLI: a dist/ older than anything it is built from would test
 * yesterday's code, so it is built again first (`npm test` builds anyway; `npx vitest` may not).
 */
function buildIfStale(): void {
  if (!buildIsStale()) return;
  process.stdout.write('dist/ is older than what it is built from: building it first\n');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.js')], { cwd: ROOT, stdio: 'inherit' });
}
