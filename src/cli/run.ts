import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };
import { InputError, resolveInputs } from '../engine/inputs.js';
import { SESSION_FORMAT, type SessionEvent } from '../session/format.js';
import { readSession, SessionFileError } from '../session/reader.js';
import { replayable } from '../session/recording.js';
import { SessionWriter } from '../session/writer.js';
import { SessionLockedError } from '../session/lock.js';
import { formatDiagnostic } from '../workflow/diagnostic.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { EXIT } from './exit-codes.js';
import { cacheOf, executeRun, overrideLimits, type OutputOptions } from './execute.js';
import { annotation, inGitHubActions } from './github.js';
import { loadChecked } from './load-checked.js';
import { maskedInputs, secretValues } from './secrets.js';

export interface RunCommandOptions extends OutputOptions {
  input: string[];
  session?: string;
  model?: string;
  workspace?: string;
  replay?: string;
}

export const NO_API_KEY =
  'ANTHROPIC_API_KEY is not set, so no model can be called. Create a key at https://console.anthropic.com/settings/keys and run:\n' +
  '  export ANTHROPIC_API_KEY=sk-ant-...\n' +
  "In GitHub Actions, pass ${{ secrets.ANTHROPIC_API_KEY }} to the action's anthropic-api-key input.";

export function fail(message: string): number {
  process.stderr.write(`conclave: ${message}\n`);
  return EXIT.usage;
}

/** Loads a workflow with every check; prints its diagnostics; undefined (after printing) when it is invalid. */
export function loadForRun(file: string, json = false): Workflow | undefined {
  const { workflow, diagnostics, unreadable } = loadChecked(file);
  for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  if (inGitHubActions()) for (const d of diagnostics) (json ? process.stderr : process.stdout).write(annotation(d));
  if (unreadable !== undefined) fail(unreadable);
  return workflow;
}

/** Opens a session file for writing; the message (exit 2) when another conclave holds it. */
export function openSession(open: () => SessionWriter): SessionWriter | string {
  try {
    return open();
  } catch (e) {
    if (e instanceof SessionLockedError) return e.message;
    throw e;
  }
}

export function newRunId(): string {
  return `${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `conclave run FILE`: runs the workflow and returns the exit code of DESIGN §4. */
export async function runCommand(file: string, options: RunCommandOptions): Promise<number> {
  const workflow = loadForRun(file, options.json);
  if (!workflow) return EXIT.usage;
  const badLimit = overrideLimits(workflow, options);
  if (badLimit) return fail(badLimit);
  let recording: SessionEvent[] | undefined;
  let given = options.input;
  if (options.replay) {
    try {
      const record = readSession(options.replay);
      recording = replayable(record.effective);
      given = [...recordedPairs(record.header.inputs, given), ...given];
    } catch (e) {
      if (e instanceof SessionFileError) return fail(e.message);
      throw e;
    }
  }
  let inputs: Record<string, Scalar>;
  try {
    inputs = resolveInputs(workflow.spec.inputs ?? {}, given);
  } catch (e) {
    if (e instanceof InputError) return fail(e.message);
    throw e;
  }
  const apiKey = process.env.ANTHROPIC_API_KEY;
  if (!apiKey && !recording && !options.offline) return fail(NO_API_KEY);
  const workspace = options.workspace ?? process.cwd();
  if (!existsSync(workspace)) return fail(`the workspace directory ${workspace} does not exist`);

  const cache = await cacheOf(options);
  if (typeof cache === 'string') return fail(cache);
  const runId = newRunId();
  const sessionPath = options.session ?? join('.conclave', 'sessions', `${runId}.jsonl`);
  if (existsSync(sessionPath)) return fail(`the session file ${sessionPath} exists already; choose another --session, or continue it with conclave resume`);
  const writer = openSession(() =>
    SessionWriter.create(
      sessionPath,
      {
        type: 'header',
        format: SESSION_FORMAT,
        run_id: runId,
        conclave_version: pkg.version,
        workflow: { path: workflow.file, sha256: sha256(workflow.text) },
        inputs: maskedInputs(workflow, inputs),
        session: sessionPath,
        started_at: new Date().toISOString(),
        ...(options.replay ? { note: `a replay of ${options.replay}` } : {}),
      },
      secretValues(workflow, inputs, apiKey),
    ),
  );
  if (typeof writer === 'string') return fail(writer);
  return executeRun({
    ...options,
    workflow,
    inputs,
    runId,
    scopeSession: sessionPath,
    writer,
    recording,
    apiKey: recording ? undefined : apiKey,
    responseCache: cache,
    secrets: secretValues(workflow, inputs, apiKey),
    workspace,
  });
}

/** A replay takes the recorded inputs (secrets aside) that the command line does not give. */
function recordedPairs(recorded: Record<string, unknown>, given: readonly string[]): string[] {
  return Object.entries(recorded)
    .filter(([name, value]) => value !== '***' && !given.some((pair) => pair.startsWith(`${name}=`)))
    .map(([name, value]) => `${name}=${String(value)}`);
}
