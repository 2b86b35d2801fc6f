import { connectionsFor, runProviders } from './providers.js';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };
import { InputError, resolveInputs } from '../engine/inputs.js';
import { limitsOf } from '../engine/ceilings/run-limits.js';
import type { SessionEvent, SessionHeader } from '../session/format.js';
import { readSession, SessionFileError, type SessionRecord } from '../session/reader.js';
import { elapsedOf, endOf, isFinished, replayable } from '../session/recording.js';
import { SessionWriter } from '../session/writer.js';
import { limitsProblem, tighterLimits, type Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { cacheOf, executeRun, type OutputOptions } from './execute.js';
import { warning } from './warning.js';
import { withLimitFlags } from './limit-flags.js';
import { loadForRun, newRunId, openSession, recordedPairs, sha256 } from './run-workflow.js';
import { organisationOf } from './organisation.js';
import { checkWorkersFlags, workerPoolOf } from './workers/worker-pool.js';
import { changedSecrets, maskerFor, secretInputs } from './secrets.js';
import { refuseHandMadeVotes } from './votes/recorded-votes.js';
import { asUsageError, UsageError } from './usage-error.js';
import { generationOf, type NotedGeneration, notedGeneration, supersedes } from './run-generations.js';
import { workspaceOfResume } from './recorded-workspace.js';
import type { HumanVote } from '../engine/people-votes.js';

export interface ResumeOptions extends OutputOptions {
  input: string[];
  allowChangedWorkflow?: boolean;
  at?: string;
  out?: string;
  workspace?: string;
  model?: string;
  /** --batch: every agent's calls through the Message Batches API (taken as given when every recorded call was batched). */
  batch?: boolean;
  provider?: string;
  /** --workflow: the workflow file, instead of the one the session names. */
  workflow?: string;
  /** --vote PROPOSAL=OPTION with --voter and --digest (and --reason), or --from-comment: a person's vote (vote-checks.ts). */
  vote?: string;
  voter?: string;
  digest?: string;
  reason?: string;
  fromComment?: boolean;
}

/**
 * The workflow file a session names, when conclave may open it on the session's word alone: a
 * .yml or .yaml regular file below the current directory. A session file may come from anyone (an
 * artifact, a fork's pull request), and must not make conclave read /etc/shadow or a token file.
 */
function recordedWorkflowPath(path: string, session: string): string {
  const refuse = (why: string) => {
    throw new UsageError(
      `${session} names its workflow as ${JSON.stringify(path)}, ${why}; conclave does not open that on a session file's word: give the workflow with ` +
        `--workflow FILE`,
    );
  };
  if (isAbsolute(path) || path.split(/[\\/]/).includes('..')) refuse('which is not a path below the current directory');
  if (!/\.ya?ml$/i.test(path)) refuse('which is not a .yml or .yaml file');
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(path);
  } catch {
    return refuse('which does not exist here');
  }
  if (!stats.isFile()) refuse('which is not a regular file');
  return path;
}

/**
 * `conclave resume FILE`: re-executes what the session recorded, answering every recorded model
 * call, tool result and setup output from the file, then continues the run live, with the
 * recorded limits as raised by the limit flags.
 */
export async function resumeCommand(file: string, options: ResumeOptions): Promise<number> {
  checkWorkersFlags(options);
  let record = asUsageError(() => readSession(file), SessionFileError);
  if (options.at !== undefined || options.out !== undefined) {
    record = fork(record, options);
  } else if (isFinished(record)) {
    const end = endOf(record)!;
    throw new UsageError(`${file} records a run that already ended (${end.status}: ${end.reason}); fork it from an earlier point with --at SEQ --out NEW`);
  } else refuseSupersededCopy(file, record);
  refuseHandMadeVotes(file, record);

  // Checked before anything is written: a refused vote leaves the session as it was.
  const votes = await votesOf(record, options, file);
  const { header } = record;
  const workflowPath = options.workflow ?? recordedWorkflowPath(header.workflow.path, record.path);
  const workflow = await loadForRun(workflowPath, options.json);
  if (sha256(workflow.text) !== header.workflow.sha256 && !options.allowChangedWorkflow) {
    throw new UsageError(`${workflowPath} changed since the session was recorded; resume with --allow-changed-workflow to continue it anyway`);
  }
  const inputs = recordedInputs(header, workflow, options.input);
  for (const name of changedSecrets(header.secret_checks, inputs)) {
    warning(
      `secret input "${name}" is not the value the run was recorded with; the recorded part stands as it was made, and the run goes on with the new value`,
    );
  }
  const recording = replayable(record.effective);
  const { first, last } = recordedLimits(recording, workflow.limits, record.path);
  // Going live, no limit is looser than the workflow's unless a flag raises it now: a session file
  // can have been written by anyone (docs/security.md).
  const limitsOnLive = withLimitFlags(tighterLimits(last, workflow.limits), options);
  const providers = runProviders(workflow.spec, options);
  const connections = await connectionsFor(providers, !options.offline && options.workers === undefined);
  const cache = await cacheOf(options);
  const organisation = options.offline ? undefined : await organisationOf(options, workflow.spec, header.run_id, warning);
  if (options.at === undefined && options.out === undefined) {
    // The newer generation may have been written on another machine: the --coordinate store every runner shares knows it.
    const elsewhere = await organisation?.notedRun(header.run_id);
    if (elsewhere && supersedes(elsewhere, record)) {
      await organisation?.close();
      await cache?.close();
      throw supersededCopy(file, record, elsewhere, 'in the --coordinate store');
    }
  }

  const lastReplayed = recording.at(-1)?.seq ?? 0;
  let generation = generationOf(record);
  const { masker, secrets } = maskerFor(workflow, inputs, process.env.ANTHROPIC_API_KEY, header.run_id, header.session);
  const workspace = workspaceOfResume(options.workspace, header, record.path);
  const pool = await workerPoolOf(options, { runId: header.run_id, workflow, workspace, providers: providers.used }, warning);
  const writer = openSession(record.path, () => SessionWriter.append(record, masker));
  return executeRun({
    ...options,
    // A parked run parks again until its batch ends, as it was asked to.
    park: options.park === true || (options.at === undefined && endOf(record)?.status === 'waiting'),
    // A run made with --batch goes on batched: its recorded calls were all answered by batches.
    batch: options.batch === true || batchedThroughout(record.effective),
    workflow,
    limits: first,
    limitsOnLive,
    inputs,
    runId: header.run_id,
    scopeSession: header.session,
    writer,
    recording,
    onLive: () => {
      generation++;
      writer.append({ type: 'resumed', replayed_through: lastReplayed, at: new Date().toISOString(), conclave_version: pkg.version });
    },
    generation: () => generation,
    connections,
    providers,
    responseCache: cache,
    organisation,
    secrets,
    masker,
    elapsedBeforeMs: elapsedOf(recording),
    workspace,
    pool,
    votes,
  });
}

/** A copy of an older generation of a run whose newer one this project noted (run-generations.ts): resuming it would pay again for what that one holds. */
function refuseSupersededCopy(file: string, record: SessionRecord): void {
  const newer = notedGeneration(process.cwd(), record.header.run_id);
  if (newer && supersedes(newer, record)) throw supersededCopy(file, record, newer);
}

function supersededCopy(file: string, record: SessionRecord, newer: NotedGeneration, where = ''): UsageError {
  const since =
    newer.generation > generationOf(record) ? `generation ${newer.generation} (${newer.status}) was written since` : `the run ended since (${newer.status})`;
  return new UsageError(
    `${file} is generation ${generationOf(record)} of run ${record.header.run_id}, and ${since}, ` +
      `as ${newer.session}${where ? ` (noted ${where})` : ''}: resuming this copy would make and pay for again what that one holds. ` +
      `Resume the newest copy${newer.status === 'waiting' ? '' : ' (it has ended: nothing is left to do)'}`,
  );
}

/** The person's vote this resume records, checked with the session and GitHub (docs/github-action.md: votes from people). */
async function votesOf(record: SessionRecord, options: ResumeOptions, file: string): Promise<HumanVote[]> {
  const flags = options.vote !== undefined || options.voter !== undefined || options.digest !== undefined || options.reason !== undefined;
  if (!flags && !options.fromComment) return [];
  if (flags && options.fromComment)
    throw new UsageError('--from-comment reads the vote from the comment: give it without --vote, --voter, --digest and --reason');
  if (options.at !== undefined) throw new UsageError('a vote goes on with the session itself: give it without --at and --out');
  const [{ voteFromEvent, voteFromFlags }, { checkedVote, RunStale, VoteRefused }] = await Promise.all([
    import('./votes/vote-source.js'),
    import('./votes/vote-checks.js'),
  ]);
  try {
    const asked = options.fromComment ? voteFromEvent(process.env) : voteFromFlags(options);
    if (typeof asked === 'string') throw new VoteRefused(asked);
    return [await checkedVote(record, asked, process.env)];
  } catch (e) {
    if (e instanceof RunStale) {
      (await import('./action/stale-run.js')).closeStale(record, e.closing, file);
      await noteCloseInStore(options, record, file);
    }
    // In GitHub Actions the step says so: the Action answers the comment (or, for a run closed as stale, updates
    // the run's own) and ends neutral (docs/github-action.md: votes from people).
    if (e instanceof VoteRefused && process.env.GITHUB_OUTPUT) {
      const { setOutput } = await import('@actions/core');
      try {
        if (e instanceof RunStale) for (const [name, value] of Object.entries(staleOutputs(record, file, e.closing))) setOutput(name, value);
        else setOutput('refused', e.message);
      } catch {
        // an outputs file that cannot be written: the refusal stands, said on stderr
      }
    }
    throw e;
  }
}

/**
 * A run closed as stale is noted in the --coordinate store too, where every runner looks: a copy
 * taken before the close is refused on another machine as it is here. A store that does not
 * answer is a warning: the close itself stands.
 */
async function noteCloseInStore(options: ResumeOptions, record: SessionRecord, file: string): Promise<void> {
  if (!(options.coordinate ?? process.env.CONCLAVE_COORDINATE)?.trim()) return;
  try {
    const organisation = await organisationOf(options, {}, record.header.run_id, warning, { pools: false });
    await organisation.noteRun(record.header.run_id, { generation: generationOf(record), status: 'stale', session: file });
    await organisation.close();
  } catch (e) {
    warning(`the run's close could not be noted in the --coordinate store (${(e as Error).message}): a copy of it is refused only here`);
  }
}

/** The step outputs of a run closed as stale: what the Action comments and publishes. */
function staleOutputs(record: SessionRecord, file: string, reason: string): Record<string, string> {
  return { status: 'stale', 'exit-code': '0', 'session-file': file, 'run-id': record.header.run_id, reason };
}

/** The run's inputs from the session header; secret inputs, masked there, must be given again. */
function recordedInputs(header: SessionHeader, workflow: Workflow, given: string[]): Record<string, Scalar> {
  const specs = workflow.spec.inputs ?? {};
  for (const name of secretInputs(workflow)) {
    if (name in header.inputs && !given.some((pair) => pair.startsWith(`${name}=`))) {
      throw new UsageError(`secret input "${name}" is not in the session file: give it again with -i ${name}=VALUE`);
    }
  }
  const declared = Object.fromEntries(Object.entries(header.inputs).filter(([name]) => Object.hasOwn(specs, name)));
  return asUsageError(() => resolveInputs(specs, [...recordedPairs(declared, given), ...given]), InputError);
}

/** The limits the recording started with, and those in force where it ends (after any `limits_changed`). */
function recordedLimits(recording: readonly SessionEvent[], fallback: Limits, file: string): { first: Limits; last: Limits } {
  for (const e of recording) {
    if (e.type !== 'run_started' && e.type !== 'limits_changed') continue;
    const problem = limitsProblem(limitsOf(e.limits));
    if (problem) throw new UsageError(`${file}: event ${e.seq} (${e.type}) records limits no workflow can have: ${problem}`);
  }
  const started = recording.find((e) => e.type === 'run_started');
  const first = started ? limitsOf(started.limits) : fallback;
  const changed = recording.findLast((e) => e.type === 'limits_changed');
  return { first, last: changed ? limitsOf(changed.limits) : first };
}

/** `--at SEQ --out NEW`: a new session holding the run's events up to SEQ, to continue from there. */
function fork(record: SessionRecord, options: ResumeOptions): SessionRecord {
  if (options.at === undefined || options.out === undefined) throw new UsageError('--at and --out go together: --at SEQ --out NEW.jsonl');
  const at = Number(options.at);
  if (!Number.isInteger(at) || at < 0 || at > record.lastSeq) throw new UsageError(`--at must be a sequence number from 0 to ${record.lastSeq}`);
  if (existsSync(options.out)) throw new UsageError(`${options.out} exists already; choose another --out`);
  const events = record.effective.filter((e) => e.seq <= at && e.type !== 'run_ended').map((e, i) => ({ ...e, seq: i + 1 }));
  const header: SessionHeader = { ...record.header, run_id: newRunId(), forked_from: { path: record.path, seq: at }, started_at: new Date().toISOString() };
  writeFileSync(options.out, [header, ...events].map((line) => `${JSON.stringify(line)}\n`).join(''));
  return readSession(options.out);
}

/** Whether the run called models and every call was answered by a message batch (a run made with --batch, or of a workflow batched throughout). */
function batchedThroughout(events: readonly SessionEvent[]): boolean {
  const calls = events.filter((e) => e.type === 'model_call');
  return calls.length > 0 && calls.every((e) => e.type === 'model_call' && e.batch !== undefined);
}
