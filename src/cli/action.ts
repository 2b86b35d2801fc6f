import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/**
 * The GitHub Action's entry (action.yml). Its inputs arrive as environment variables, never
 * spliced into a shell line; they become an argument array for `conclave run` or `conclave
 * resume`, which does the rest (outputs, job summary, annotations, masks).
 */
export function actionArgs(env: NodeJS.ProcessEnv): string[] | string {
  const value = (name: string) => (env[`INPUT_${name}`] ?? '').trim();
  const args = value('RESUME_FROM') ? ['resume', value('RESUME_FROM')] : ['run', value('WORKFLOW')];
  if (!value('RESUME_FROM') && !value('WORKFLOW')) return 'the workflow input is required: the path of a workflow file';
  if (value('INPUTS')) {
    let map: unknown;
    try {
      map = parse(value('INPUTS'));
    } catch (e) {
      return `the inputs input is not YAML or JSON: ${(e as Error).message}`;
    }
    if (map === null || typeof map !== 'object' || Array.isArray(map)) return 'the inputs input must be a map of names to values, in YAML or JSON';
    for (const [name, v] of Object.entries(map)) args.push('-i', `${name}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  if (value('SESSION_FILE') && !value('RESUME_FROM')) args.push('--session', value('SESSION_FILE'));
  const cache = value('CACHE');
  if (cache === 'true') args.push('--cache');
  else if (cache && cache !== 'false') args.push('--cache', cache);
  for (const [input, flag] of [
    ['BUDGET_USD', '--budget-usd'],
    ['MAX_TURNS', '--max-turns'],
    ['MAX_TURNS_PER_AGENT', '--max-turns-per-agent'],
    ['TIMEOUT', '--timeout'],
    ['CACHE_TTL', '--cache-ttl'],
  ] as const) {
    if (value(input)) args.push(flag, value(input));
  }
  return args;
}

async function main(): Promise<void> {
  const args = actionArgs(process.env);
  const output = process.env.GITHUB_OUTPUT;
  const exitCodeSet = () => output !== undefined && existsSync(output) && /^exit-code<</m.test(readFileSync(output, 'utf8'));
  if (typeof args === 'string') {
    process.stdout.write(`::error::${args}\n`);
    if (output) appendFileSync(output, 'status=invalid\nexit-code=2\n');
    process.exitCode = 2;
    return;
  }
  const bin = fileURLToPath(new URL('../bin/conclave.js', import.meta.url));
  // The key input only when given: otherwise a key the job set in env: reaches conclave untouched.
  const { INPUT_ANTHROPIC_API_KEY: key, ...env } = process.env;
  if (key?.trim()) env.ANTHROPIC_API_KEY = key.trim();
  const child = spawn(process.execPath, [bin, ...args], { stdio: 'inherit', env });
  const code = await new Promise<number>((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal === 'SIGINT' ? 130 : 143))));
  // A workflow refused before it ran writes no outputs: say how the step ended all the same.
  if (output && !exitCodeSet()) appendFileSync(output, `status=invalid\nexit-code=${code}\n`);
  process.exitCode = code;
}

await main();
