import { runShell } from '../agents/tools/shell.js';
import { sandboxPlan, type SandboxPlan } from '../agents/tools/sandbox.js';
import { toolEnvironment } from '../agents/tools/tool-env.js';
import { shellQuote, type Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import { durationMs, sizeBytes } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar, SetupStepSpec } from '../workflow/types.js';
import type { ProgressListener } from './progress-events.js';
import { inputEnvName } from './inputs.js';
import { connectMcp } from './mcp-setup.js';
import { SetupError } from './setup-error.js';
import type { McpToolbox } from '../agents/tools/mcp.js';
import type { RunOptions } from './run-options.js';

export const DEFAULT_SETUP_TIMEOUT = '5m';
export const DEFAULT_MAX_OUTPUT = '1MB';

/**
 * Runs one setup step with `sh -c` (the full environment, as a GitHub step has) and returns its
 * stdout without trailing newlines, as `$(…)` would. A non-zero exit, a timeout or too much
 * output fails the step, showing its stderr.
 */
export async function runSetupStep(step: SetupStepSpec, command: string, env: NodeJS.ProcessEnv, cwd: string, signal: AbortSignal): Promise<string> {
  const timeout = step.timeout ?? DEFAULT_SETUP_TIMEOUT;
  const maxOutput = step.max_output ?? DEFAULT_MAX_OUTPUT;
  const r = await runShell({ command, cwd, env, timeoutMs: durationMs(timeout), maxOutput: sizeBytes(maxOutput), stopAtMaxOutput: true, signal });
  const why = r.error
    ? `could not start: ${r.error}`
    : r.aborted
      ? 'stopped: the run was interrupted'
      : r.timedOut
        ? `timed out after ${timeout}`
        : r.overflowed
          ? `printed more than max_output (${maxOutput})`
          : r.code === 0
            ? undefined
            : `exited with code ${r.code}`;
  if (why === undefined) return r.stdout.replace(/\n+$/, '');
  const stderr = r.stderr.trim() ? `\n${r.stderr.trim().slice(-4000)}` : '';
  throw new SetupError(`setup step "${step.id}" ${why}${stderr}`);
}

const NO_EVENT = { event_name: '', title: '', body: '', comment: '', author: '' };

/** What the workflow's `env:` and setup steps may read: inputs, workflow and run. */
export function baseScope(workflow: Workflow, inputs: Record<string, Scalar>, runId: string, sessionPath: string): Scope {
  // An optional input with no default that was not given is empty, as GitHub has it.
  const declared = Object.fromEntries(Object.keys(workflow.spec.inputs ?? {}).map((name) => [name, '']));
  return { inputs: { ...declared, ...inputs }, workflow: { name: workflow.spec.name, file: workflow.file }, run: { id: runId, session: sessionPath } };
}

/** The workflow's `env:`, its `$<< >>` filled in. */
export function declaredEnv(workflow: Workflow, base: Scope): Record<string, string> {
  const declared: Record<string, string> = {};
  for (const [key, value] of Object.entries(workflow.spec.env ?? {})) {
    const template = workflow.templates.get(`env.${key}`);
    declared[key] = template ? fillTemplate(template, base) : String(value);
  }
  return declared;
}

/** What setup needs of the run's options, and where and how it runs now. */
export type SetupOptions = Pick<RunOptions, 'workflow' | 'inputs' | 'identity' | 'place' | 'recording' | 'servers' | 'event'> &
  Partial<Pick<RunOptions, 'answers'>> & {
    cwd: string;
    signal: AbortSignal;
    progress: ProgressListener;
  };

/** What the agents' tools run with: their environment, run_command's sandbox, the MCP servers. */
export interface ToolSetup {
  env: NodeJS.ProcessEnv;
  /** The workflow's `env:`, filled in: a worker's tools start from it (docs/workers.md). */
  declared?: Record<string, string>;
  sandbox?: SandboxPlan;
  mcp?: McpToolbox;
}

/**
 * The run's setup: the workflow's `env:` filled in, then each setup step (its recorded output on
 * resume), then the MCP servers. Returns the scope agents' prompts are filled from, and what
 * the tools run with.
 */
export async function runSetup(options: SetupOptions): Promise<{ scope: Scope; tools: ToolSetup }> {
  const { workflow, inputs, signal, progress } = options;
  const { env } = options.place;
  const { journal } = options.recording;
  const base = baseScope(workflow, inputs, options.identity.runId, options.identity.sessionPath);
  const declared = declaredEnv(workflow, base);
  const inputEnv = Object.fromEntries(Object.entries(base.inputs as Record<string, Scalar>).map(([name, value]) => [inputEnvName(name), String(value)]));
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
  // run_command's sandbox is planned (and a missing one said) before the tools' environment is made and the MCP servers start.
  const sandbox = sandboxFor(options);
  const toolEnv = toolEnvironment(env, declared, workflow.spec.tools_env ?? [], options.identity.providers);
  const mcp = signal.aborted
    ? undefined
    : await connectMcp({
        workflow,
        base,
        toolEnv,
        cwd: options.cwd,
        journal,
        startServers: options.servers?.start !== false,
        mask: options.servers?.mask ?? ((t) => t),
        signal,
        progress,
      });
  return {
    // `github`: the event as it was when the run began (the session header keeps it); empty outside GitHub Actions.
    scope: { ...base, env: envScope, setup: outputs, github: { ...NO_EVENT, ...options.event } },
    tools: { env: toolEnv, declared, sandbox, ...(mcp ? { mcp } : {}) },
  };
}

function stringsOf(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** run_command's sandbox, said once when it cannot be had (`required` is refused before the run). */
function sandboxFor(options: Pick<SetupOptions, 'workflow' | 'cwd' | 'identity' | 'progress'>): SandboxPlan {
  const { workflow, cwd, identity, progress } = options;
  if (!workflow.tools.has('run_command')) return {};
  const protection = {
    githubWorkflows: workflow.spec.edit_github_workflows === true,
    files: identity.ownFiles ?? [],
    ...(identity.credentials ? { hidden: identity.credentials } : {}),
  };
  const plan = sandboxPlan(workflow.spec.sandbox, cwd, protection);
  if (!plan.wrap && workflow.spec.sandbox !== 'off') {
    progress({
      type: 'warning',
      message:
        `${plan.why}: run_command runs without a sandbox, as you, able to read this job's processes and their environment (set sandbox: required to ` +
        `refuse this, or sandbox: off to say it is meant)`,
    });
  }
  return plan;
}
