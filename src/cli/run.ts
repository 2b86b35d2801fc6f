import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };
import { InputError, resolveInputs } from '../engine/inputs.js';
import { Run, type RunResult } from '../engine/run.js';
import { Provider } from '../provider/client.js';
import { SESSION_FORMAT, SessionWriter } from '../session/writer.js';
import { formatDiagnostic } from '../workflow/diagnostic.js';
import type { Scalar } from '../workflow/types.js';
import { EXIT } from './exit-codes.js';
import { loadChecked } from './load-checked.js';
import { progressLines } from './progress-lines.js';

export interface RunCommandOptions {
  input: string[];
  session?: string;
  model?: string;
  workspace?: string;
  json?: boolean;
  quiet?: boolean;
}

const MAX_RETRIES = 4;
const REQUEST_TIMEOUT_MS = 10 * 60_000;
/** Environment variables whose values are masked in the session file. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE/i;

/** `conclave run FILE`: runs the workflow and returns the exit code of DESIGN §4. */
export async function runCommand(file: string, options: RunCommandOptions): Promise<number> {
  const fail = (message: string) => {
    process.stderr.write(`conclave: ${message}\n`);
    return EXIT.usage;
  };
  const { workflow, diagnostics, unreadable } = loadChecked(file);
  for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  if (unreadable !== undefined) return fail(unreadable);
  if (!workflow) return EXIT.usage;

  let inputs: Record<string, Scalar>;
  try {
    inputs = resolveInputs(workflow.spec.inputs ?? {}, options.input);
  } catch (e) {
    if (e instanceof InputError) return fail(e.message);
    throw e;
  }
  const apiKey = process.env.ANTHROPIC_API_KEY;
  if (!apiKey) {
    return fail(
      'ANTHROPIC_API_KEY is not set, so no model can be called. Create a key at https://console.anthropic.com/settings/keys and run:\n' +
        '  export ANTHROPIC_API_KEY=sk-ant-...\n' +
        'In GitHub Actions, pass ${{ secrets.ANTHROPIC_API_KEY }} to the action\'s anthropic-api-key input.',
    );
  }
  const workspace = options.workspace ?? process.cwd();
  if (!existsSync(workspace)) return fail(`the workspace directory ${workspace} does not exist`);

  const runId = `${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
  const sessionPath = options.session ?? join('.conclave', 'sessions', `${runId}.jsonl`);
  if (existsSync(sessionPath)) return fail(`the session file ${sessionPath} exists already; choose another --session, or continue it with conclave resume`);
  const secretInputs = Object.entries(workflow.spec.inputs ?? {}).filter(([, spec]) => spec.secret).map(([name]) => name);
  const secrets = [
    apiKey,
    ...secretInputs.flatMap((name) => (inputs[name] === undefined ? [] : [String(inputs[name])])),
    ...Object.entries(process.env).flatMap(([name, value]) => (SECRET_NAME.test(name) && value && value.length >= 6 ? [value] : [])),
  ];
  const session = SessionWriter.create(
    sessionPath,
    {
      type: 'header',
      format: SESSION_FORMAT,
      run_id: runId,
      conclave_version: pkg.version,
      workflow: { path: workflow.file, sha256: createHash('sha256').update(workflow.text).digest('hex') },
      inputs: Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, secretInputs.includes(k) ? '***' : v])),
      started_at: new Date().toISOString(),
    },
    secrets,
  );

  const provider = new Provider({ apiKey, maxRetries: MAX_RETRIES, requestTimeoutMs: Math.min(REQUEST_TIMEOUT_MS, workflow.limits.timeoutMs) });
  const run = new Run({
    workflow,
    inputs,
    runId,
    sessionPath,
    workspace,
    env: process.env,
    modelOverride: options.model,
    callModel: (request, signal, onRetry) => provider.call(request, signal, onRetry),
    session,
    progress: options.quiet ? () => {} : progressLines((line) => process.stderr.write(line)),
  });
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => () => run.interrupt(signal);
  const onInt = onSignal('SIGINT');
  const onTerm = onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let result: RunResult;
  try {
    result = await run.start();
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    session.close();
  }
  process.stdout.write(options.json ? `${JSON.stringify(resultJson(result, sessionPath), null, 2)}\n` : resultText(result, sessionPath, workflow.limits.budgetUsd));
  return result.exitCode;
}

function resultJson(result: RunResult, session: string) {
  return {
    status: result.status,
    exit_code: result.exitCode,
    reason: result.reason,
    summary: result.summary,
    outputs: result.outputs,
    output_errors: result.outputErrors,
    usage: { ...result.usage.usage, cost_usd: round(result.usage.costUsd) },
    agents: Object.fromEntries(
      Object.entries(result.agents).map(([name, a]) => [name, { turns: a.turns, calls: a.spend.calls, ...a.spend.usage, cost_usd: round(a.spend.costUsd) }]),
    ),
    proposals: result.proposals.map((p) => ({ id: p.id, question: p.question, status: p.status, winner: p.winner, tally: p.tally })),
    session,
  };
}

function resultText(result: RunResult, session: string, budget: number): string {
  const lines = [`conclave: ${result.status} — ${result.reason}`];
  if (result.summary) lines.push('', result.summary.trim(), '');
  for (const [name, value] of Object.entries(result.outputs)) lines.push(`output ${name}: ${value.includes('\n') ? `\n${value}` : value}`);
  for (const error of result.outputErrors) lines.push(`output error: ${error}`);
  const { usage, costUsd } = result.usage;
  lines.push(`usage: ${usage.input_tokens} input + ${usage.output_tokens} output tokens (cache: ${usage.cache_read_input_tokens} read, ${usage.cache_creation_input_tokens} written) · $${costUsd.toFixed(4)} of $${budget.toFixed(2)}`);
  lines.push(`session: ${session}`);
  return `${lines.join('\n')}\n`;
}

function round(n: number): number {
  return Number(n.toFixed(6));
}
