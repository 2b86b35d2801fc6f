import { spawn } from 'node:child_process';
import { shellQuote, type Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import { durationMs, sizeBytes } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar, SetupStepSpec } from '../workflow/types.js';
import type { ProgressListener } from './events.js';
import { inputEnvName } from './inputs.js';
import type { Journal } from './journal.js';

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

export interface SetupOptions {
  workflow: Workflow;
  inputs: Record<string, Scalar>;
  runId: string;
  sessionPath: string;
  env: NodeJS.ProcessEnv;
  cwd: string;
  journal: Journal;
  signal: AbortSignal;
  progress: ProgressListener;
}

/**
 * The run's setup: the workflow's `env:` filled in, then each setup step (its recorded output on
 * resume). Returns the scope agents' prompts are filled from and the environment tools start from.
 */
export async function runSetup(options: SetupOptions): Promise<{ scope: Scope; toolEnv: NodeJS.ProcessEnv }> {
  const { workflow, inputs, env, journal, signal, progress } = options;
  const base: Scope = { inputs, workflow: { name: workflow.spec.name, file: workflow.file }, run: { id: options.runId, session: options.sessionPath } };
  const declared: Record<string, string> = {};
  for (const [key, value] of Object.entries(workflow.spec.env ?? {})) {
    const template = workflow.templates.get(`env.${key}`);
    declared[key] = template ? fillTemplate(template, base) : String(value);
  }
  const inputEnv = Object.fromEntries(Object.entries(inputs).map(([name, value]) => [inputEnvName(name), String(value)]));
  const shellEnv = { ...env, ...declared, ...inputEnv };
  const envScope = { ...stringsOf(env), ...declared };
  const outputs: Record<string, string> = {};
  for (const [i, step] of (workflow.spec.setup ?? []).entries()) {
    if (signal.aborted) break;
    const command = fillTemplate(workflow.templates.get(`setup[${i}].run`)!, { ...base, env: envScope, setup: outputs }, shellQuote);
    const recorded = journal.setupOutput(step.id, signal);
    if (recorded) {
      outputs[step.id] = (await recorded).stdout;
    } else {
      await journal.live(signal);
      progress({ type: 'setup', id: step.id, state: 'running' });
      try {
        outputs[step.id] = await runSetupStep(step, command, shellEnv, options.cwd, signal);
      } catch (e) {
        progress({ type: 'setup', id: step.id, state: 'failed' });
        if (!signal.aborted) journal.append({ type: 'setup_failed', id: step.id, error: (e as Error).message });
        throw e;
      }
      progress({ type: 'setup', id: step.id, state: 'done' });
    }
    journal.append({ type: 'setup_finished', id: step.id, stdout: outputs[step.id]! });
  }
  return { scope: { ...base, env: envScope, setup: outputs }, toolEnv: { ...env, ...declared } };
}

function stringsOf(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
