import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as core from '@actions/core';
import { parse } from 'yaml';

/**
 * The GitHub Action's entry (action.yml, `runs.using: node24`, bundled into action/). Its inputs
 * come through @actions/core; they become an argument array for `conclave run` or `conclave
 * resume` (never a shell line), which does the rest: outputs, job summary, annotations, masks.
 */
export function actionArgs(input: (name: string) => string): string[] | string {
  const value = (name: string) => input(name).trim();
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
  const cache = value('cache');
  if (cache === 'true') args.push('--cache');
  else if (cache && cache !== 'false') args.push('--cache', cache);
  for (const [name, flag] of [
    ['budget-usd', '--budget-usd'],
    ['max-turns', '--max-turns'],
    ['max-turns-per-agent', '--max-turns-per-agent'],
    ['timeout', '--timeout'],
    ['cache-ttl', '--cache-ttl'],
    ['sarif', '--sarif'],
  ] as const) {
    if (value(name)) args.push(flag, value(name));
  }
  return args;
}

/** The environment conclave runs in: the job's, with the key input only when it is given. */
export function conclaveEnv(env: NodeJS.ProcessEnv, key: string): NodeJS.ProcessEnv {
  // A key the job set in env: reaches conclave untouched when the input is left out. The inputs
  // themselves (INPUT_*) are the Action's business, and one of them is the key.
  const own = Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('INPUT_')));
  if (key.trim()) own.ANTHROPIC_API_KEY = key.trim();
  return own;
}

async function main(): Promise<void> {
  const input = (name: string) => core.getInput(name);
  // The key is masked by conclave itself, in its first line: announcing it here too printed it twice.
  const cwd = resolve(process.env.GITHUB_WORKSPACE ?? '.', input('working-directory') || '.');
  const args = actionArgs(input);
  if (typeof args === 'string' || !existsSync(cwd)) {
    core.error(typeof args === 'string' ? args : `the working-directory ${input('working-directory')} does not exist`);
    core.setOutput('status', 'invalid');
    core.setOutput('exit-code', '2');
    process.exitCode = 2;
    return;
  }
  // The CLI bundled beside this entry (action/conclave.js), or the package's own (dist/conclave.js).
  const cli = fileURLToPath(new URL('./conclave.js', import.meta.url));
  const child = spawn(process.execPath, [cli, ...args], { stdio: 'inherit', cwd, env: conclaveEnv(process.env, input('anthropic-api-key')) });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((done) => child.on('close', (c, signal) => done(c ?? (signal === 'SIGINT' ? 130 : 143))));
  // A workflow refused before it ran writes no outputs: say how the step ended all the same.
  if (stepOutput('exit-code') === undefined) {
    core.setOutput('status', 'invalid');
    core.setOutput('exit-code', String(code));
  }
  const session = stepOutput('session-file');
  if (input('comment').trim() === 'true' && session) await comment(resolve(cwd, session), input('github-token'));
  process.exitCode = code;
}

/** A step output conclave wrote (GITHUB_OUTPUT's `name<<DELIMITER` blocks), or undefined. */
function stepOutput(name: string): string | undefined {
  const file = process.env.GITHUB_OUTPUT;
  if (!file || !existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  const start = lines.findLastIndex((l) => l.startsWith(`${name}<<`));
  if (start === -1) return undefined;
  const end = lines.indexOf(lines[start]!.slice(name.length + 2), start + 1);
  return end === -1 ? undefined : lines.slice(start + 1, end).join('\n');
}

/** comment: true — the pull request's one conclave comment for this workflow, kept up to date. A failure to comment is a warning: the run's result stands. */
async function comment(session: string, token: string): Promise<void> {
  if (!token.trim()) return core.warning('comment: true needs a github-token: no comment was written');
  core.setSecret(token.trim());
  try {
    const [{ readSession }, { summarize }, { commentBody, commentMarker, upsertComment }] = await Promise.all([
      import('../session/reader.js'),
      import('../session/summary.js'),
      import('./pr-comment.js'),
    ]);
    const summary = summarize(readSession(session));
    const url = await upsertComment(token.trim(), commentBody(summary), commentMarker(summary.header.workflow.path));
    core.info(`conclave: the pull request comment is at ${url}`);
  } catch (e) {
    core.warning(`conclave could not comment on the pull request: ${(e as Error).message}`);
  }
}

await main();
