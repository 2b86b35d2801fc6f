import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildIsStale } from './fresh-build.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/conclave.js', import.meta.url));

// Each test file that runs the CLI loads this module again (in watch mode too): one whose build is
// older than the sources would test yesterday's code, so it fails instead, saying what to do.
if (buildIsStale()) throw new Error('dist/ is older than src/ (or the installed packages): run npm run build, or npm test, which builds first');

/**
 * The Node that runs the built CLI: this one, or CONCLAVE_TEST_NODE (a path to another, such as
 * a Node 24 from `npx -y node@24 -p process.execPath`) to run the CLI's tests on it.
 */
export const NODE = process.env.CONCLAVE_TEST_NODE || process.execPath;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a user would: `conclave ARGS…` in `cwd`. */
export function conclave(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      NODE,
      [BIN, ...args],
      { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
