import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as core from '@actions/core';
import { readSession } from '../../session/reader.js';
import { endOf, isFinished } from '../../session/recording.js';
import { summarize } from '../../session/summary.js';
import { artifactName, generationOf, newerCopy, parkedRuns, sessionCopies } from './parked-runs.js';

/**
 * The Action's part in the parked-run recipe (docs/github-action.md): the runs to resume, the
 * session a resume is given (a downloaded artifact's folder), the copy that is not the newest,
 * the run that has already ended, and the name under which each job publishes its session.
 */

/** How the step ends without running conclave, and the outputs that say so. */
export interface StepEnd {
  outputs: Record<string, string>;
  exitCode: number;
  error?: string;
  notice?: string;
}

/**
 * `list-parked: true`: the runs whose newest copy is parked until a message batch ends, as the
 * matrix of the jobs that resume them; `list-parked: votes`: those that wait for people's votes,
 * on pull request `pull` when given (the job a vote comment started).
 */
export async function listParked(token: string, votes = false, pull = ''): Promise<StepEnd> {
  const refused = (error: string): StepEnd => ({ outputs: { status: 'invalid', 'exit-code': '2' }, exitCode: 2, error });
  if (!token.trim()) return refused("list-parked needs a github-token that may read the repository's artifacts (actions: read)");
  if (pull && !/^[1-9]\d{0,8}$/.test(pull)) return refused(`pull-request must be a pull request's number; found ${JSON.stringify(pull)}`);
  try {
    const { copies, unknownOrigin } = await sessionCopies(token.trim());
    if (unknownOrigin > 0)
      core.warning(
        `conclave skipped ${unknownOrigin} session cop${unknownOrigin === 1 ? 'y' : 'ies'} among the artifacts: GitHub did not say whose code ` +
          'the run that uploaded it ran (no head_repository_id), and a copy from a fork could be forged',
      );
    const parked = parkedRuns(copies, votes ? 'voting' : 'waiting', pull ? Number(pull) : undefined);
    return {
      outputs: { status: 'success', 'exit-code': '0', parked: JSON.stringify(parked) },
      exitCode: 0,
      notice: `conclave: ${parked.length} parked run${parked.length === 1 ? '' : 's'} to resume${parked.map((p, i) => `${i ? ',' : ':'} ${p.run}`).join('')}`,
    };
  } catch (e) {
    return {
      outputs: { status: 'error', 'exit-code': '1' },
      exitCode: 1,
      error: `conclave could not list the repository's artifacts: ${(e as Error).message}`,
    };
  }
}

/** `resume-from` as a session file: a folder (download-artifact's `path`) holding exactly one `.jsonl` is that file. */
export function sessionFileOf(path: string): string | { error: string } {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch {
    return path; // conclave says what is wrong with it
  }
  if (!isDirectory) return path;
  const sessions = readdirSync(path).filter((f) => f.endsWith('.jsonl'));
  if (sessions.length !== 1)
    return { error: `resume-from ${path} is a folder with ${sessions.length} session files (.jsonl): give the file, or a folder holding exactly one` };
  return join(path, sessions[0]!);
}

/**
 * Before a resume: a run that has already ended is done (status `already-done`, the step green,
 * nothing paid); a copy older than one published since is superseded (status `superseded`, exit 2), for
 * resuming it would make again, and pay again for, what the newer copy already holds.
 */
export async function beforeResume(file: string, token: string, cwd: string): Promise<StepEnd | undefined> {
  let record: ReturnType<typeof readSession>;
  try {
    record = readSession(file);
  } catch {
    return undefined; // conclave says what is wrong with it
  }
  const sessionFile = relative(cwd, file) || file;
  const generation = generationOf(record);
  const end = endOf(record);
  if (isFinished(record) && end) {
    return {
      outputs: {
        ...end.outputs,
        status: 'already-done',
        'exit-code': '0',
        'session-file': sessionFile,
        'cost-usd': (end.usage?.costUsd ?? 0).toFixed(6),
        outputs: JSON.stringify(end.outputs),
        'run-id': record.header.run_id,
        generation: String(generation),
      },
      exitCode: 0,
      notice: `conclave: run ${record.header.run_id} already ended (${end.status}: ${end.reason}); nothing was run or paid`,
    };
  }
  if (!token.trim() || !process.env.GITHUB_REPOSITORY) return undefined;
  let newer: ReturnType<typeof newerCopy>;
  let copies: Awaited<ReturnType<typeof sessionCopies>>['copies'];
  try {
    copies = (await sessionCopies(token.trim())).copies;
    newer = newerCopy(copies, record.header.run_id, generation);
  } catch (e) {
    core.warning(`conclave could not look for a newer copy of this session among the artifacts (${(e as Error).message}); it goes on with this one`);
    return undefined;
  }
  // A copy that holds people's votes is resumed only as one of the run's own generations: published by the repository's own runs (parked-runs.ts).
  if (!newer && record.events.some((e) => e.type === 'human_vote') && !copies.some((c) => c.runId === record.header.run_id && c.generation === generation))
    return {
      outputs: { status: 'invalid', 'exit-code': '2', 'session-file': sessionFile, 'run-id': record.header.run_id, generation: String(generation) },
      exitCode: 2,
      error:
        `${sessionFile} holds people's votes, and no generation ${generation} of run ${record.header.run_id} was published by this repository's own ` +
        'runs (its default branch, or the pull request that began it): this copy is not resumed',
    };
  if (!newer) return undefined;
  return {
    outputs: { status: 'superseded', 'exit-code': '2', 'session-file': sessionFile, 'run-id': record.header.run_id, generation: String(generation) },
    exitCode: 2,
    error:
      `${sessionFile} is generation ${generation} of run ${record.header.run_id}, and generation ${newer.generation} (${newer.status}) was published ` +
      `since, by workflow run ${newer.workflowRun} as artifact ${newer.name}: resuming this copy would make and pay for again what that one holds. ` +
      `Resume the newest copy${newer.status === 'waiting' || newer.status === 'voting' ? '' : ' (it has ended: nothing is left to do)'}`,
  };
}

/** After conclave ran: the run, the session's generation, and the artifact name to publish it under (empty when no session was written). */
export function publishedAs(file: string | undefined): Record<string, string> {
  if (!file) return { 'artifact-name': '' };
  try {
    const record = readSession(file);
    const generation = generationOf(record);
    const status = endOf(record)?.status ?? 'interrupted';
    // A run parked for people's votes is resumed by the job a vote starts, not by the scheduled one that polls batches.
    const ballots = status === 'waiting' ? summarize(record).ballots : [];
    const named = ballots.length > 0 ? 'voting' : status;
    const deadlines = ballots.map((b) => Date.parse(b.deadline ?? '')).filter(Number.isFinite);
    const { commit, pull_request: pull } = record.header.github ?? {};
    return {
      'run-id': record.header.run_id,
      generation: String(generation),
      'artifact-name': artifactName(record.header.run_id, generation, named, commit, pull, deadlines.length ? Math.min(...deadlines) : undefined),
    };
  } catch {
    return { 'artifact-name': '' };
  }
}
