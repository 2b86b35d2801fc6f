import { existsSync } from 'node:fs';
import type { Estimate } from '../../engine/estimate/estimate.js';
import { recordedRunOf, type RecordedRun } from '../../engine/estimate/estimate-history.js';
import { estimateWorkflow } from '../../engine/estimate/workflow-estimate.js';
import { InputError, resolveInputs } from '../../engine/inputs.js';
import { CALL_RETRIES, Provider, REQUEST_TIMEOUT_MS } from '../../provider/client.js';
import { MissingCredentials } from '../../provider/connect.js';
import { readSession, SessionFileError, type SessionRecord } from '../../session/reader.js';
import type { Workflow } from '../../workflow/load.js';
import { printableJson } from '../command-guard.js';
import { estimateMarkdown, estimateText } from './estimate-text.js';
import { warning } from '../warning.js';
import { connectionsFor, runProviders, type RunProviders } from '../providers.js';
import { loadForRun, recordedPairs } from '../run-workflow.js';
import { asUsageError, UsageError } from '../usage-error.js';

export interface EstimateOptions {
  input: string[];
  /** commander's `--no-setup`. */
  setup: boolean;
  from: string[];
  format: 'text' | 'json' | 'markdown';
  json?: boolean;
  model?: string;
  provider?: string;
  workspace?: string;
  /** As run --batch: every agent priced at the batch price. */
  batch?: boolean;
}

/**
 * `conclave estimate FILE`: what a run will cost, before it runs (docs/pricing.md: before a run),
 * with no model call that costs money: only the API's free token counting.
 */
export async function estimateCommand(file: string, options: EstimateOptions): Promise<number> {
  const format = options.json ? 'json' : options.format;
  const workflow = await loadForRun(file, format === 'json');
  const sessions = options.from.map((path) => sessionOf(path, workflow));
  // The first session's inputs stand in for those not given (secret ones aside), as a replay takes them.
  const given = sessions[0] ? [...recordedPairs(sessions[0].header.inputs, options.input), ...options.input] : options.input;
  const history = sessions.map((record) => recordedRunOf(record.effective));
  const estimate = await estimateOf(workflow, given, options, history);
  if (format === 'json') process.stdout.write(`${printableJson(estimate)}\n`);
  else if (format === 'markdown') process.stdout.write(`${estimateMarkdown(estimate).join('\n')}\n`);
  else process.stdout.write(estimateText(estimate, file));
  return 0;
}

/**
 * A workflow's estimate for these inputs (`-i` pairs), with the flags a run of it would be given:
 * --provider, --model and --batch checked as the run checks them.
 */
export async function estimateOf(
  workflow: Workflow,
  given: readonly string[],
  options: Omit<EstimateOptions, 'input' | 'from' | 'format'>,
  history: RecordedRun[],
): Promise<Estimate> {
  const workspace = options.workspace ?? process.cwd();
  if (!existsSync(workspace)) throw new UsageError(`the workspace directory ${workspace} does not exist`);
  const providers = runProviders(workflow.spec, options);
  const inputs = asUsageError(() => resolveInputs(workflow.spec.inputs ?? {}, given), InputError);
  const counter = await counterOf(providers);
  let countFailed = false;
  return estimateWorkflow({
    workflow,
    inputs,
    setup: options.setup,
    workspace,
    overrides: {
      ...(options.model ? { modelOverride: options.model } : {}),
      ...(providers.override ? { providerOverride: providers.override } : {}),
      ...(options.batch ? { batchOverride: true } : {}),
    },
    providers: providers.used,
    history,
    count: (request, provider) =>
      counter?.countTokens(request, provider).catch((e: unknown) => {
        if (!countFailed) warning(`the API could not count tokens (${(e as Error).message}): prompts are estimated from their length`);
        countFailed = true;
        return undefined;
      }) ?? Promise.resolve(undefined),
    warn: warning,
  });
}

/** The providers' token counting; none (prompts estimated from their length) when no credentials are set. */
async function counterOf(providers: RunProviders): Promise<Provider | undefined> {
  try {
    const connections = await connectionsFor(providers, true);
    return connections && new Provider({ connections, maxRetries: CALL_RETRIES, requestTimeoutMs: REQUEST_TIMEOUT_MS });
  } catch (e) {
    if (!(e instanceof MissingCredentials)) throw e;
    warning(`${e.message.split(/\.(\s|$)/)[0]}: prompts are estimated from their length instead of counted`);
    return undefined;
  }
}

/** An earlier session of the same workflow, read as `show` reads it. */
function sessionOf(path: string, workflow: Workflow): SessionRecord {
  const record = asUsageError(() => readSession(path), SessionFileError);
  const name = record.effective.find((e) => e.type === 'run_started')?.workflow;
  if (name !== undefined && name !== workflow.spec.name)
    throw new UsageError(`--from ${path} is a session of the workflow "${name}", not of "${workflow.spec.name}": its turns say nothing of this one`);
  return record;
}
