import { eventTrust } from './github/event-trust.js';
import { githubOrigin } from './github/github-origin.js';
import { workspaceOfRun } from './recorded-workspace.js';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };
import { InputError, resolveInputs } from '../engine/inputs.js';
import { SESSION_FORMAT, type SessionEvent, type SessionHeader } from '../session/format.js';
import { readSession, SessionFileError } from '../session/reader.js';
import { replayable } from '../session/recording.js';
import { SessionWriter } from '../session/writer.js';
import { SessionLockedError } from '../session/lock.js';
import { missingRequiredSandbox } from '../agents/tools/sandbox.js';
import { formatDiagnostic } from '../workflow/diagnostic.js';
import type { Workflow } from '../workflow/load.js';
import { cacheOf, executeRun, type OutputOptions } from './execute.js';
import { warning } from './warning.js';
import { annotation, inGitHubActions } from './github/github.js';
import { writeInvalidSummary } from './github/invalid-summary.js';
import { writeCommand } from './command-guard.js';
import { withLimitFlags } from './limit-flags.js';
import { loadChecked, looksLikeSession } from './load-checked.js';
import { maskedInputs, maskerFor, secretChecks, secretInputs } from './secrets.js';
import { organisationOf } from './organisation.js';
import { connectionsFor, runProviders } from './providers.js';
import { checkWorkersFlags, workerPoolOf } from './workers/worker-pool.js';
import { asUsageError, UsageError } from './usage-error.js';

export interface RunCommandOptions extends OutputOptions {
  input: string[];
  session?: string;
  model?: string;
  /** --batch: every agent's calls through the Message Batches API. */
  batch?: boolean;
  provider?: string;
  workspace?: string;
  replay?: string;
}

/** Loads a workflow with every check and prints its diagnostics; a UsageError when it cannot run. */
export async function loadForRun(file: string, json = false): Promise<Workflow> {
  if (looksLikeSession(file)) {
    throw new UsageError(`${file} is a session file, not a workflow: continue it with conclave resume ${file}, or print it with conclave show ${file}`);
  }
  const { workflow, diagnostics, unreadable } = await loadChecked(file);
  for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  if (inGitHubActions()) for (const d of diagnostics) writeCommand(json ? process.stderr : process.stdout, annotation(d));
  if (inGitHubActions() && (unreadable !== undefined || !workflow)) writeInvalidSummary(file, diagnostics, unreadable);
  if (unreadable !== undefined) throw new UsageError(unreadable);
  if (!workflow) throw new UsageError(`${file} has errors (listed above); nothing was run`);
  const noSandbox = missingRequiredSandbox(workflow.spec.sandbox, workflow.tools.has('run_command'));
  if (noSandbox) throw new UsageError(noSandbox);
  return workflow;
}

/** Opens a session file for writing; a UsageError when another conclave holds it or it cannot be written. */
export function openSession(path: string, open: () => SessionWriter): SessionWriter {
  try {
    return asUsageError(open, SessionLockedError);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code !== 'string') throw e;
    const why = {
      EEXIST: 'a file stands where a directory must be',
      ENOTDIR: 'a file stands where a directory must be',
      EACCES: 'permission denied',
      ENOSPC: 'the disk is full',
      EROFS: 'the file system is read-only',
      EISDIR: 'it is a directory',
    }[code];
    throw new UsageError(`cannot write the session file ${path}: ${why ?? (e as Error).message}`);
  }
}

export function newRunId(): string {
  return `${new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `conclave run FILE`: runs the workflow and returns its exit code (docs/design.md: ending). */
export async function runCommand(file: string, options: RunCommandOptions): Promise<number> {
  checkWorkersFlags(options);
  const workflow = await loadForRun(file, options.json);
  const limits = withLimitFlags(workflow.limits, options);
  let recording: SessionEvent[] | undefined;
  let given = options.input;
  // What the event said and whether it is a stranger's: asked now, or, for a replay, as the run recorded it.
  let trusted: Pick<SessionHeader, 'trust' | 'event'>;
  let asked: { head?: string; pull?: number } = {};
  if (options.replay) {
    const record = asUsageError(() => readSession(options.replay!), SessionFileError);
    recording = replayable(record.effective);
    given = [...recordedPairs(record.header.inputs, given), ...given];
    trusted = { ...(record.header.trust ? { trust: record.header.trust } : {}), ...(record.header.event ? { event: record.header.event } : {}) };
  } else {
    const { head, pull, ...rest } = await eventTrust(process.env);
    trusted = rest;
    asked = { ...(head ? { head } : {}), ...(pull ? { pull } : {}) };
  }
  const inputs = asUsageError(() => resolveInputs(workflow.spec.inputs ?? {}, given), InputError);
  // With --workers, the workers call the models, each with its own credentials: the coordinator needs none.
  const providers = runProviders(workflow.spec, options);
  const connections = await connectionsFor(providers, !recording && !options.offline && options.workers === undefined);
  const { workspace, recorded: recordedWorkspace } = workspaceOfRun(options.workspace);

  if (options.park && options.replay)
    warning('--park does nothing with --replay: a replay answers every call from the recording and never waits for a batch; leave --park out');
  else if (options.park && !options.batch && !workflow.batched && !workflow.spec.people)
    warning(
      '--park parks a run while its calls wait for a message batch or for people to vote, and no agent of this workflow has batch: true and it names ' +
        'no people: the run goes on as without it',
    );
  const cache = await cacheOf(options);
  const runId = newRunId();
  const organisation = recording || options.offline ? undefined : await organisationOf(options, workflow.spec, runId, warning);
  const sessionPath = options.session ?? join('.conclave', 'sessions', `${runId}.jsonl`);
  if (sessionPath.trim() === '') throw new UsageError('--session needs a file path');
  if (existsSync(sessionPath))
    throw new UsageError(`the session file ${sessionPath} exists already; choose another --session, or continue it with conclave resume`);
  const { masker, secrets } = maskerFor(workflow, inputs, process.env.ANTHROPIC_API_KEY, runId, sessionPath);
  const pool = await workerPoolOf(options, { runId, workflow, workspace, providers: providers.used }, warning);
  const writer = openSession(sessionPath, () =>
    SessionWriter.create(
      sessionPath,
      {
        type: 'header',
        format: SESSION_FORMAT,
        run_id: runId,
        conclave_version: pkg.version,
        workflow: { path: workflow.file, sha256: sha256(workflow.text) },
        inputs: maskedInputs(workflow, inputs),
        ...(secretInputs(workflow).some((name) => inputs[name] !== undefined) ? { secret_checks: secretChecks(workflow, inputs) } : {}),
        session: sessionPath,
        started_at: new Date().toISOString(),
        ...(options.replay ? { note: `a replay of ${options.replay}` } : {}),
        ...githubOrigin(process.env, asked),
        ...trusted,
        ...(recordedWorkspace ? { workspace: recordedWorkspace } : {}),
      },
      masker,
    ),
  );
  return executeRun({
    ...options,
    workflow,
    limits,
    inputs,
    runId,
    scopeSession: sessionPath,
    writer,
    recording,
    ...(options.replay ? { replayOf: options.replay } : {}),
    generation: () => 1,
    ...(recording ? {} : { connections }),
    providers,
    responseCache: cache,
    organisation,
    secrets,
    masker,
    workspace,
    pool,
  });
}

/** Recorded inputs (secrets aside) that the command line does not give, as `-i` pairs. */
export function recordedPairs(recorded: Record<string, unknown>, given: readonly string[]): string[] {
  return Object.entries(recorded)
    .filter(([name, value]) => value !== '***' && !given.some((pair) => pair.startsWith(`${name}=`)))
    .map(([name, value]) => `${name}=${String(value)}`);
}
