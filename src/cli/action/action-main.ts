import { EXIT } from '../../exit-codes.js';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as core from '@actions/core';
import { parse } from 'yaml';
import { AUTHORED_EVENTS } from '../github/event-trust.js';
import { FOLLOWED_PULL_ENV } from '../github/followed-pull.js';
import { forkWithoutSecrets } from './fork-without-secrets.js';
import { experimentArgs } from './action-experiment.js';

/**
 * The GitHub Action's logic (its entry, action.ts, calls `run`; the bundle in action/ is built
 * from that). Its inputs come through @actions/core; they become an argument array for
 * `conclave run` or `conclave resume` (never a shell line), which does the rest: job summary,
 * annotations, masks. The step outputs conclave writes come back here and are set through
 * @actions/core, so that a harness that stands in for it (`@github/local-action`) sees them.
 */
export function actionArgs(input: (name: string) => string): string[] | string {
  const value = (name: string) => input(name).trim();
  if (value('worker') === 'true') return workerArgs(value);
  if (value('experiment')) return experimentArgs(value, process.env);
  if (value('test')) return testArgs(value);
  const args = value('resume-from') ? ['resume', value('resume-from')] : ['run', value('workflow')];
  if (!value('resume-from') && !value('workflow')) return 'the workflow input is required: the path of a workflow file';
  if (value('inputs')) {
    let map: unknown;
    try {
      map = parse(value('inputs'));
    } catch (e) {
      return `the inputs input is not YAML or JSON: ${(e as Error).message}`;
    }
    if (map === null || typeof map !== 'object' || Array.isArray(map)) return 'the inputs input must be a map of names to values, in YAML or JSON';
    for (const [name, v] of Object.entries(map)) args.push('-i', `${name}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  if (value('session-file') && !value('resume-from')) args.push('--session', value('session-file'));
  // `response-cache`, once `cache` (kept): "cache" also names the workflow's prompt cache.
  const cache = value('response-cache') || value('cache');
  if (cache === 'true') args.push('--response-cache');
  else if (cache && cache !== 'false') args.push('--response-cache', cache);
  const cacheTtl = value('response-cache-ttl') || value('cache-ttl');
  if (cacheTtl) args.push('--response-cache-ttl', cacheTtl);
  for (const [name, flag] of [
    ['budget-usd', '--budget-usd'],
    ['max-estimate-usd', '--max-estimate-usd'],
    ['max-turns', '--max-turns'],
    ['max-turns-per-agent', '--max-turns-per-agent'],
    ['max-tokens-total', '--max-tokens-total'],
    ['timeout', '--timeout'],
    ['sarif', '--sarif'],
    ['rate-limit', '--rate-limit'],
    ['coordinate', '--coordinate'],
    ['provider', '--provider'],
    ['workers', '--workers'],
    ['queue', '--queue'],
    ['workspace', '--workspace'],
  ] as const) {
    if (value(name)) args.push(flag, value(name));
  }
  if (value('park') === 'true') args.push('--park');
  const vote = voteArgs(value);
  if (typeof vote === 'string') return vote;
  args.push(...vote);
  for (const pool of value('spend-pools')
    .split(/[\s,]+/)
    .filter(Boolean))
    args.push('--spend-pool', pool);
  return args;
}

/** A person's vote on a resumed run (docs/github-action.md: votes from people): `vote`, `voter` and `digest`, or `from-comment: true`. */
function voteArgs(value: (name: string) => string): string[] | string {
  const fromComment = value('from-comment') === 'true';
  const given = ['vote', 'voter', 'digest'].filter((name) => value(name));
  if (!fromComment && given.length === 0) return [];
  if (!value('resume-from')) return 'a vote goes to a run that waits for it: give resume-from with vote or from-comment';
  if (fromComment) return given.length ? `from-comment reads the vote from the comment: leave out ${given.join(', ')}` : ['--from-comment'];
  if (given.length < 3) return 'a vote needs vote (PROPOSAL=OPTION), voter and digest together';
  return ['--vote', value('vote'), '--voter', value('voter'), '--digest', value('digest')];
}

/** `test: PATHS`: the workflows' test files run offline from their recordings (docs/testing-workflows.md); `true` for every one below. */
function testArgs(value: (name: string) => string): string[] | string {
  if (value('workflow') || value('resume-from')) return 'test runs test files, not a workflow: give test, or workflow (or resume-from), not both';
  const paths = value('test')
    .split(/\s+/)
    .filter((p) => p && p !== 'true');
  return ['test', ...paths, ...(value('junit') ? ['--junit', value('junit')] : [])];
}

/** `worker: true`: this job takes turns of a run whose coordinator job was given the same `workers` and `queue` (docs/workers.md). */
function workerArgs(value: (name: string) => string): string[] | string {
  if (!value('workers')) return 'worker: true needs the workers input: the Redis URL the coordinator job was given';
  const args = ['worker', value('workers')];
  if (value('queue')) args.push('--queue', value('queue'));
  if (value('concurrency')) args.push('--concurrency', value('concurrency'));
  return args;
}

/** The environment conclave runs in: the job's, with the key and the workers' secret inputs only when they are given. */
export function conclaveEnv(env: NodeJS.ProcessEnv, key: string, workersSecret = ''): NodeJS.ProcessEnv {
  // A key the job set in env: reaches conclave untouched when the input is left out. The inputs
  // themselves (INPUT_*) are the Action's business, and one of them is the key.
  const own = Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('INPUT_')));
  if (key.trim()) own.ANTHROPIC_API_KEY = key.trim();
  if (workersSecret.trim()) own.CONCLAVE_WORKERS_SECRET = workersSecret.trim();
  return own;
}

export async function run(): Promise<void> {
  const input = (name: string) => core.getInput(name);
  // The key is masked by conclave itself, in its first line: announcing it here too printed it twice.
  const cwd = resolve(process.env.GITHUB_WORKSPACE ?? '.', input('working-directory') || '.');
  if (!existsSync(cwd)) return fail(`the working-directory ${input('working-directory')} does not exist`);
  const listed = input('list-parked').trim();
  if (listed === 'true' || listed === 'votes')
    return end(await (await import('./action-sessions.js')).listParked(input('github-token'), listed === 'votes', input('pull-request').trim()));
  const args = actionArgs(input);
  if (typeof args === 'string') return fail(args);
  // Another provider's credentials are not the repository's secrets: only Anthropic's key is known to be withheld.
  const anthropic = ['', 'anthropic'].includes(input('provider').trim());
  const skipped = args[0] === 'run' && anthropic ? forkWithoutSecrets(process.env, input('anthropic-api-key').trim() !== '') : undefined;
  if (skipped) return end(skipped);
  if (args[0] === 'experiment') {
    const gated = await (await import('./action-experiment.js')).experimentGate(
      process.env,
      input('github-token'),
      input('experiment-label').trim() || 'conclave-experiment',
    );
    if (gated) return end(gated);
  }
  const followed = input('pull-request').trim();
  if (followed) {
    const checked = await (await import('./followed-pull-step.js')).followedPullStep(args[0]!, followed, input('github-token'));
    if (checked) return end(checked);
  }
  if (args[0] === 'resume') {
    const sessions = await import('./action-sessions.js');
    const file = sessions.sessionFileOf(resolve(cwd, args[1]!));
    if (typeof file !== 'string') return fail(file.error);
    // As the step outputs will name it (session-file): relative to the working directory, as upload-artifact takes it.
    args[1] = relative(cwd, file).startsWith('..') ? file : relative(cwd, file);
    const done = await sessions.beforeResume(file, input('github-token'), cwd);
    if (done) return end(done);
  }
  // The CLI bundled beside this entry (action/conclave.js), or, run from source, the package's build.
  const cli = ['./conclave.js', '../../../dist/conclave.js'].map((p) => fileURLToPath(new URL(p, import.meta.url))).find((f) => existsSync(f));
  if (!cli) return fail('conclave is not built: run npm run build first');
  // conclave writes its step outputs to a file of this step's own, read back below.
  const outputsDir = mkdtempSync(join(tmpdir(), 'conclave-outputs-'));
  const outputsFile = join(outputsDir, 'outputs');
  writeFileSync(outputsFile, '');
  const child = spawn(process.execPath, [cli, ...args], {
    stdio: 'inherit',
    cwd,
    env: {
      ...conclaveEnv(process.env, input('anthropic-api-key'), input('workers-secret')),
      // A vote, and the author of an issue or comment the run reads, are checked with GitHub, with the job's token (or the one given).
      ...(args.includes('--from-comment') || args.includes('--vote') || followed || AUTHORED_EVENTS.has(process.env.GITHUB_EVENT_NAME ?? '')
        ? { GITHUB_TOKEN: input('github-token').trim() }
        : {}),
      ...(followed ? { [FOLLOWED_PULL_ENV]: followed } : {}),
      GITHUB_ACTIONS: 'true',
      GITHUB_OUTPUT: outputsFile,
    },
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((done) => child.on('close', (c, signal) => done(c ?? (signal === 'SIGINT' ? 130 : 143))));
  if (args[0] === 'test') return testEnd(code, outputsDir);
  if (args[0] === 'experiment') {
    const outputs = readOutputs(outputsFile);
    rmSync(outputsDir, { recursive: true, force: true });
    return (await import('./action-experiment.js')).experimentEnd(code, outputs, cwd, input);
  }
  const outputs = readOutputs(outputsFile);
  rmSync(outputsDir, { recursive: true, force: true });
  // A run closed as stale (its pull request moved on) says why in a notice, not as an output of its own.
  const staleReason = outputs.status === 'stale' ? outputs.reason : undefined;
  delete outputs.reason;
  if (args[0] !== 'worker')
    Object.assign(outputs, (await import('./action-sessions.js')).publishedAs(outputs['session-file'] && resolve(cwd, outputs['session-file'])));
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, value);
  // A workflow refused before it ran writes no outputs: say how the step ended all the same.
  if (outputs['exit-code'] === undefined) {
    core.setOutput('status', args[0] !== 'worker' ? 'invalid' : code === 0 ? 'success' : 'error');
    core.setOutput('exit-code', String(code));
  }
  const session = outputs['session-file'];
  const page =
    input('report').trim() !== 'false' && session && staleReason === undefined
      ? await (await import('./action-report.js')).publishReport(resolve(cwd, session), cwd, outputs['artifact-name'] ?? '')
      : undefined;
  // A run closed as stale leaves a comment that shows a newer run of the pull request as it is.
  if (input('comment').trim() === 'true' && session) await comment(resolve(cwd, session), input('github-token'), staleReason !== undefined, page);
  // A vote for a run whose pull request moved on: the run is closed (its comment says so), the voter's vote goes to the newer run's job.
  if (staleReason !== undefined && args[0] === 'resume') {
    core.notice(`conclave closed run ${outputs['run-id'] ?? ''} as stale: ${staleReason}`);
    process.exitCode = 0;
    return;
  }
  // A refused vote is no failed job: anyone who copies the ballot's line makes one. The comment is answered, the step neutral.
  if (outputs.refused && args.includes('--from-comment')) {
    core.setOutput('status', 'refused');
    core.notice(outputs.refused);
    await (await import('../votes/vote-reply.js')).answerRefusedVote(input('github-token'), outputs.refused);
    process.exitCode = 0;
    return;
  }
  // A parked run (75) is a step that did its part: a later job resumes the session.
  process.exitCode = code === EXIT.waiting ? 0 : code;
}

/** `test`: its results are in the log, the annotations and the job summary conclave wrote; the step says how it went. */
function testEnd(code: number, outputsDir: string): void {
  rmSync(outputsDir, { recursive: true, force: true });
  core.setOutput('status', ({ [EXIT.ok]: 'passed', [EXIT.failure]: 'failed', [EXIT.usage]: 'invalid' } as Record<number, string>)[code] ?? 'error');
  core.setOutput('exit-code', String(code));
  process.exitCode = code;
}

/** The step ends without running conclave (a list of parked runs, a run already done, a stale copy): its outputs, and a line that says why. */
function end(step: import('./action-sessions.js').StepEnd): void {
  for (const [name, value] of Object.entries(step.outputs)) core.setOutput(name, value);
  if (step.error) core.error(step.error);
  if (step.notice) core.notice(step.notice);
  process.exitCode = step.exitCode;
}

/** The step refused before conclave ran: an error, and outputs that say so. */
function fail(message: string): void {
  core.error(message);
  core.setOutput('status', 'invalid');
  core.setOutput('exit-code', '2');
  process.exitCode = 2;
}

/** The step outputs conclave wrote (GITHUB_OUTPUT's `name<<DELIMITER` blocks), the last of each name. */
export function readOutputs(file: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const block = /^([^=<]+)<<(.+)$/.exec(lines[i]!);
    if (!block) continue;
    const end = lines.indexOf(block[2]!, i + 1);
    if (end === -1) break;
    outputs[block[1]!] = lines.slice(i + 1, end).join('\n');
    i = end;
  }
  return outputs;
}

/** comment: true — the pull request's one conclave comment for this workflow, kept up to date. A failure to comment is a warning: the run's result stands. */
async function comment(session: string, token: string, onlyIfShown = false, page?: string): Promise<void> {
  if (!token.trim()) return core.warning('comment: true needs a github-token: no comment was written');
  core.setSecret(token.trim());
  try {
    const [{ readSession }, { summarize }, { commentBody, commentMarker, upsertComment }] = await Promise.all([
      import('../../session/reader.js'),
      import('../../session/summary.js'),
      import('../github/pr-comment.js'),
    ]);
    const summary = summarize(readSession(session));
    const url = await upsertComment(
      token.trim(),
      commentBody(summary, page),
      commentMarker(summary.header.workflow.path),
      summary.header.github?.pull_request,
      onlyIfShown ? summary.header.run_id : undefined,
    );
    core.info(url ? `conclave: the pull request comment is at ${url}` : 'conclave: the pull request comment shows a newer run, and is left as it is');
  } catch (e) {
    core.warning(`conclave could not comment on the pull request: ${(e as Error).message}`);
  }
}
