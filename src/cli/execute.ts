import { Journal } from '../engine/journal.js';
import { Run, type RunResult } from '../engine/run.js';
import { Provider } from '../provider/client.js';
import type { ResponseCache } from '../session/cache.js';
import type { SessionEvent } from '../session/format.js';
import type { SessionWriter } from '../session/writer.js';
import { durationMs } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { addMask, inGitHubActions } from './github.js';
import { reportToGitHub } from './github-report.js';
import { progressLines } from './progress-lines.js';

export interface OutputOptions {
  json?: boolean;
  quiet?: boolean;
  /** --cache: true for the default SQLite file, or a file or URL. */
  cache?: string | true;
  /** --offline: answer only from the cache or a replay. */
  offline?: boolean;
  budgetUsd?: string;
  timeout?: string;
}

/** Applies --budget-usd and --timeout to the workflow's limits; a message when a value is not one. */
export function overrideLimits(workflow: Workflow, options: OutputOptions): string | undefined {
  if (options.budgetUsd !== undefined) {
    const budget = Number(options.budgetUsd);
    if (!Number.isFinite(budget) || budget <= 0) return `--budget-usd must be a number of dollars above 0; got ${JSON.stringify(options.budgetUsd)}`;
    workflow.limits.budgetUsd = budget;
  }
  if (options.timeout !== undefined) {
    const seconds = /^\d+(\.\d+)?$/.test(options.timeout) ? Number(options.timeout) : undefined;
    try {
      workflow.limits.timeoutMs = durationMs(seconds ?? options.timeout);
    } catch {
      return `--timeout must be a duration such as 90s, 15m or 1h, or a number of seconds; got ${JSON.stringify(options.timeout)}`;
    }
  }
  return undefined;
}

/** Opens --cache before anything is written; a message (and exit 2) when it cannot be opened. */
export async function cacheOf(options: OutputOptions & { replay?: string }): Promise<ResponseCache | undefined | string> {
  if (options.offline && options.cache === undefined && !options.replay) return '--offline answers only from --cache or --replay: give one of them';
  if (options.cache === undefined) return undefined;
  const { openCache, CacheError } = await import('../session/cache.js');
  try {
    return await openCache(options.cache);
  } catch (e) {
    if (e instanceof CacheError) return e.message;
    return `cannot open the response cache: ${(e as Error).message}`;
  }
}

export interface ExecuteOptions extends Omit<OutputOptions, 'cache'> {
  workflow: Workflow;
  inputs: Record<string, Scalar>;
  runId: string;
  /** The session path the run's expressions see (`run.session`): the original one, when resumed. */
  scopeSession: string;
  writer: SessionWriter;
  /** What to re-execute first: a resumed, forked or replayed session's events. */
  recording?: readonly SessionEvent[];
  /** Called when the recording is used up, before the first new event. */
  onLive?: () => void;
  /** Undefined for --replay and --offline, which make no model call. */
  apiKey?: string;
  /** Values to hide from the logs (in GitHub Actions: ::add-mask::). */
  secrets?: readonly string[];
  responseCache?: ResponseCache;
  elapsedBeforeMs?: number;
  model?: string;
  workspace: string;
}

const MAX_RETRIES = 4;
const REQUEST_TIMEOUT_MS = 10 * 60_000;

/** Runs (or continues) a workflow, prints the result and returns the exit code. */
export async function executeRun(options: ExecuteOptions): Promise<number> {
  const { workflow, writer } = options;
  const github = inGitHubActions();
  // Workflow commands go to stdout, but for --json, whose stdout is one JSON object.
  const command = (text: string) => (options.json ? process.stderr : process.stdout).write(text);
  if (github) for (const secret of options.secrets ?? []) command(addMask(secret));
  const provider = options.apiKey && !options.offline
    ? new Provider({ apiKey: options.apiKey, maxRetries: MAX_RETRIES, requestTimeoutMs: Math.min(REQUEST_TIMEOUT_MS, workflow.limits.timeoutMs) })
    : undefined;
  const journal = new Journal(
    {
      write: (event) => writer.append(event),
      sync: () => writer.sync(),
      lineOf: (event) => writer.lineOf(event),
      onLive: options.onLive,
    },
    options.recording,
  );
  // The live view is for a person at a terminal; CI logs and pipes get plain lines.
  const interactive = !options.quiet && !options.json && !github && process.stdout.isTTY === true && !process.env.CI;
  const view = interactive ? (await import('./live-view.js')).liveView(Object.keys(workflow.spec.agents), workflow.limits) : undefined;
  await view?.ready;
  const run = new Run({
    workflow,
    inputs: options.inputs,
    runId: options.runId,
    sessionPath: options.scopeSession,
    workspace: options.workspace,
    env: process.env,
    modelOverride: options.model,
    callModel: (request, signal, onRetry) => {
      if (!provider) throw new Error('no model can be called in a replay');
      return provider.call(request, signal, onRetry);
    },
    journal,
    cache: options.responseCache,
    liveCalls: provider !== undefined,
    elapsedBeforeMs: options.elapsedBeforeMs,
    progress: options.quiet ? () => {} : (view?.listener ?? progressLines((line) => process.stderr.write(line))),
  });
  const onInt = () => run.interrupt('SIGINT');
  const onTerm = () => run.interrupt('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let result: RunResult;
  try {
    result = await run.start();
  } finally {
    await view?.finish();
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    writer.close();
    await options.responseCache?.close();
  }
  if (github) reportToGitHub(result, writer.path, command);
  process.stdout.write(options.json ? `${JSON.stringify(resultJson(result, writer.path), null, 2)}\n` : resultText(result, writer.path, workflow.limits.budgetUsd));
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
