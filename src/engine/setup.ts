import { spawn } from 'node:child_process';
import { durationMs, sizeBytes } from '../workflow/limits.js';
import type { SetupStepSpec } from '../workflow/types.js';

export const DEFAULT_SETUP_TIMEOUT = '5m';
export const DEFAULT_MAX_OUTPUT = '1MB';

/** A setup step that failed: the run stops before any agent turn (exit 1). */
export class SetupError extends Error {}

/**
 * Runs one setup step with `sh -c` and returns its stdout without trailing newlines, as `$(…)`
 * would. A non-zero exit, a timeout or too much output fails the step, showing its stderr.
 */
export function runSetupStep(step: SetupStepSpec, command: string, env: NodeJS.ProcessEnv, cwd: string, signal: AbortSignal): Promise<string> {
  const timeoutMs = durationMs(step.timeout ?? DEFAULT_SETUP_TIMEOUT);
  const maxOutput = sizeBytes(step.max_output ?? DEFAULT_MAX_OUTPUT);
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let failure: string | undefined;
    const kill = (why: string) => {
      failure ??= why;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => kill(`timed out after ${step.timeout ?? DEFAULT_SETUP_TIMEOUT}`), timeoutMs);
    const onAbort = () => kill('stopped: the run was interrupted');
    signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxOutput) kill(`printed more than max_output (${step.max_output ?? DEFAULT_MAX_OUTPUT})`);
      else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString('utf8')).slice(-4000);
    });
    child.on('error', (e) => kill(e.message));
    child.on('close', (code) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      const why = failure ?? (code === 0 ? undefined : `exited with code ${code}`);
      if (why === undefined) return resolve(Buffer.concat(out).toString('utf8').replace(/\n+$/, ''));
      const stderr = err.trim() ? `\n${err.trim()}` : '';
      reject(new SetupError(`setup step "${step.id}" ${why}${stderr}`));
    });
  });
}
