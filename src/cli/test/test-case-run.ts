import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { SessionEvent, SessionHeader } from '../../session/format.js';
import { readSession } from '../../session/reader.js';
import type { TestCase, TestFile } from './expectations.js';
import type { RunDivergence } from './changed-request.js';

/** What `run --json` prints: the parts a case's expectations read. */
export interface RunJson {
  status: string;
  reason: string;
  outputs: Record<string, string>;
  usage: { cost_usd: number };
  proposals?: { id: string; status: string; winner?: string | null }[];
  session: string;
  /** A replay that produced something else than its recording: where. */
  divergence?: RunDivergence;
}

/** One run of a case: its result, the events it wrote, and where its files are. */
export interface CaseRun {
  code: number;
  result?: RunJson;
  events: SessionEvent[];
  /** The session's header, where the run wrote one. */
  header?: SessionHeader;
  stderr: string;
  /** The session file the run wrote (in the scratch folder, unless the mode named another place). */
  session: string;
  /** The scratch folder, removed by cleanUp. */
  scratch: string;
  /** Where a live run worked (a scratch copy), for its files; undefined offline. */
  workspace?: string;
  wallMs: number;
  /** Why no result came (the run was killed at its time limit, the process failed to start). */
  broken?: string;
}

/** What the case's run inherits: not the job's GitHub files, so that a case writes no summary, output or annotation of the job's. */
function caseEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(GITHUB_|RUNNER_|ACTIONS_)/.test(name)));
}

/** Where this conclave was started from, to run each case as `conclave run` (a process of its own: its signals, streams and lock). */
function conclaveEntry(): string {
  return process.argv[1]!;
}

const SKIPPED = new Set(['node_modules', '.conclave']);

/**
 * Runs one case as `conclave run` in a scratch folder: offline, answered from its recording
 * (`--replay`: no network, nothing paid, the workspace only read); live, on a copy of its
 * workspace, so that what the agents write stays in the copy.
 */
export interface CaseRunMode {
  live: boolean;
  timeoutMs: number;
  /** What the run's environment adds (the shared batches' server as its API). */
  env?: Record<string, string>;
  /** Where the session is written, to be kept (an experiment's runs); default: in the scratch folder. */
  session?: string;
  /** What `conclave run` is given besides the case's own (`--batch`). */
  args?: readonly string[];
  /** Go on with the session (`mode.session`) of a run that parked, as `conclave resume`, on a fresh copy of the workspace. */
  resume?: boolean;
}

export async function runCase(test: TestFile, testCase: TestCase, mode: CaseRunMode, signal: AbortSignal): Promise<CaseRun> {
  const { live, timeoutMs } = mode;
  const scratch = mkdtempSync(join(tmpdir(), 'conclave-test-'));
  const session = mode.session ?? join(scratch, 'session.jsonl');
  const source = testCase.workspace ?? process.cwd();
  let cwd = source;
  if (live) {
    cwd = join(scratch, basename(source) || 'workspace');
    cpSync(source, cwd, { recursive: true, filter: (from) => !SKIPPED.has(basename(from)) });
  }
  const inputs = Object.entries(testCase.inputs).flatMap(([name, value]) => ['-i', `${name}=${value}`]);
  const args = mode.resume
    ? [conclaveEntry(), 'resume', session, '--workflow', test.workflow, '--workspace', cwd, '--json', ...(mode.args ?? [])]
    : [
        conclaveEntry(),
        'run',
        test.workflow,
        '--json',
        '--session',
        session,
        ...inputs,
        ...(live ? [] : ['--replay', testCase.session!]),
        ...(mode.args ?? []),
      ];
  const started = Date.now();
  const { code, stdout, stderr, broken } = await spawned(args, cwd, { ...caseEnvironment(), ...mode.env }, timeoutMs, signal);
  const wallMs = Date.now() - started;
  let result: RunJson | undefined;
  try {
    result = JSON.parse(stdout) as RunJson;
  } catch {
    result = undefined;
  }
  let events: SessionEvent[] = [];
  let header: SessionHeader | undefined;
  try {
    ({ effective: events, header } = readSession(session));
  } catch {
    // No session was written (the run refused to start): its stderr says why.
  }
  return {
    code,
    ...(result ? { result } : {}),
    events,
    ...(header ? { header } : {}),
    stderr,
    session,
    scratch,
    ...(live ? { workspace: cwd } : {}),
    wallMs,
    ...(broken ? { broken } : {}),
  };
}

/** Removes what a case's run left in its scratch folder. */
export function cleanUp(run: CaseRun): void {
  rmSync(run.scratch, { recursive: true, force: true });
}

function spawned(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number, signal: AbortSignal) {
  return new Promise<{ code: number; stdout: string; stderr: string; broken?: string }>((done) => {
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let broken: string | undefined;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const stop = (why: string) => {
      broken ??= why;
      child.kill('SIGTERM');
    };
    const timer = setTimeout(() => stop(`the run took longer than ${Math.round(timeoutMs / 1000)} s and was stopped`), timeoutMs);
    const onAbort = () => stop('conclave test was stopped');
    signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => (broken ??= `conclave could not be started: ${e.message}`));
    child.on('close', (code, killedBy) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      done({ code: code ?? (killedBy === 'SIGTERM' ? 143 : 1), stdout, stderr, ...(broken ? { broken } : {}) });
    });
  });
}
