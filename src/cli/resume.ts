import { existsSync, writeFileSync } from 'node:fs';
import pkg from '../../package.json' with { type: 'json' };
import { InputError, resolveInputs } from '../engine/inputs.js';
import type { SessionHeader } from '../session/format.js';
import { readSession, SessionFileError, type SessionRecord } from '../session/reader.js';
import { elapsedOf, endOf, isFinished, replayable } from '../session/recording.js';
import { SessionWriter } from '../session/writer.js';
import type { Scalar } from '../workflow/types.js';
import { EXIT } from './exit-codes.js';
import { cacheOf, executeRun, overrideLimits, type OutputOptions } from './execute.js';
import { fail, loadForRun, NO_API_KEY, newRunId, openSession, sha256 } from './run.js';
import { secretInputs, secretValues } from './secrets.js';

export interface ResumeOptions extends OutputOptions {
  input: string[];
  allowChangedWorkflow?: boolean;
  at?: string;
  out?: string;
  workspace?: string;
  model?: string;
}

/**
 * `conclave resume FILE`: re-executes what the session recorded, answering every recorded model
 * call, tool result and setup output from the file, then continues the run live.
 */
export async function resumeCommand(file: string, options: ResumeOptions): Promise<number> {
  let record: SessionRecord;
  try {
    record = readSession(file);
  } catch (e) {
    if (e instanceof SessionFileError) return fail(e.message);
    throw e;
  }
  if (options.at !== undefined || options.out !== undefined) {
    const forked = fork(record, options);
    if (typeof forked === 'number') return forked;
    record = forked;
  } else if (isFinished(record)) {
    const end = endOf(record)!;
    return fail(`${file} records a run that already ended (${end.status}: ${end.reason}); fork it from an earlier point with --at SEQ --out NEW`);
  }

  const { header } = record;
  const workflow = loadForRun(header.workflow.path, options.json);
  if (!workflow) return EXIT.usage;
  const badLimit = overrideLimits(workflow, options);
  if (badLimit) return fail(badLimit);
  if (sha256(workflow.text) !== header.workflow.sha256 && !options.allowChangedWorkflow) {
    return fail(`${header.workflow.path} changed since the session was recorded; resume with --allow-changed-workflow to continue it anyway`);
  }
  let inputs: Record<string, Scalar>;
  try {
    inputs = recordedInputs(header, secretInputs(workflow), options.input, workflow.spec.inputs ?? {});
  } catch (e) {
    if (e instanceof InputError) return fail(e.message);
    throw e;
  }
  const apiKey = process.env.ANTHROPIC_API_KEY;
  if (!apiKey && !options.offline) return fail(NO_API_KEY);
  const cache = await cacheOf(options);
  if (typeof cache === 'string') return fail(cache);

  const recording = replayable(record.effective);
  const lastReplayed = recording.at(-1)?.seq ?? 0;
  const writer = openSession(() => SessionWriter.append(record, secretValues(workflow, inputs, apiKey)));
  if (typeof writer === 'string') return fail(writer);
  return executeRun({
    ...options,
    workflow,
    inputs,
    runId: header.run_id,
    scopeSession: header.session,
    writer,
    recording,
    onLive: () => writer.append({ type: 'resumed', replayed_through: lastReplayed, at: new Date().toISOString(), conclave_version: pkg.version }),
    apiKey,
    responseCache: cache,
    secrets: secretValues(workflow, inputs, apiKey),
    elapsedBeforeMs: elapsedOf(recording),
    workspace: options.workspace ?? process.cwd(),
  });
}

/** The run's inputs from the session header; secret inputs, masked there, must be given again. */
function recordedInputs(header: SessionHeader, secrets: string[], given: string[], specs: Parameters<typeof resolveInputs>[0]): Record<string, Scalar> {
  const again = resolveInputs(specs, given);
  const inputs: Record<string, Scalar> = {};
  for (const [name, value] of Object.entries(header.inputs)) {
    if (secrets.includes(name)) {
      if (!given.some((pair) => pair.startsWith(`${name}=`))) {
        throw new InputError(`secret input "${name}" is not in the session file: give it again with -i ${name}=VALUE`);
      }
      inputs[name] = again[name]!;
    } else {
      inputs[name] = value as Scalar;
    }
  }
  return inputs;
}

/** `--at SEQ --out NEW`: a new session holding the run's events up to SEQ, to continue from there. */
function fork(record: SessionRecord, options: ResumeOptions): SessionRecord | number {
  if (options.at === undefined || options.out === undefined) return fail('--at and --out go together: --at SEQ --out NEW.jsonl');
  const at = Number(options.at);
  if (!Number.isInteger(at) || at < 0 || at > record.lastSeq) return fail(`--at must be a sequence number from 0 to ${record.lastSeq}`);
  if (existsSync(options.out)) return fail(`${options.out} exists already; choose another --out`);
  const events = record.effective.filter((e) => e.seq <= at && e.type !== 'run_ended').map((e, i) => ({ ...e, seq: i + 1 }));
  const header: SessionHeader = { ...record.header, run_id: newRunId(), forked_from: { path: record.path, seq: at }, started_at: new Date().toISOString() };
  writeFileSync(options.out, [header, ...events].map((line) => `${JSON.stringify(line)}\n`).join(''));
  return readSession(options.out);
}
