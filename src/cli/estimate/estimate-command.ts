import { existsSync } from 'node:fs';
import { Journal } from '../../engine/replay/journal.js';
import { estimateRun, type Estimate } from '../../engine/estimate/estimate.js';
import { recordedRunOf } from '../../engine/estimate/estimate-history.js';
import { estimateGroups, firstMessageOf } from '../../engine/estimate/estimate-team.js';
import { Accounting } from '../../engine/ceilings/accounting.js';
import { expandTeam } from '../../engine/teams/for-each.js';
import { InputError, resolveInputs } from '../../engine/inputs.js';
import { teamContext } from '../../engine/teams/profiles.js';
import { baseScope, runSetup } from '../../engine/setup.js';
import { promptLayoutOf } from '../../engine/prompt-cache/prompt-layout.js';
import { withTeamTools } from '../../engine/teams/team-tools.js';
import { CALL_RETRIES, Provider, REQUEST_TIMEOUT_MS } from '../../provider/client.js';
import { MissingCredentials } from '../../provider/connect.js';
import type { ProviderName } from '../../provider/clouds.js';
import { readSession, SessionFileError, type SessionRecord } from '../../session/reader.js';
import type { Workflow } from '../../workflow/load.js';
import type { Scope } from '../../workflow/evaluate.js';
import { printableJson } from '../command-guard.js';
import { estimateMarkdown, estimateText } from './estimate-text.js';
import { warning } from '../execute.js';
import { connectionsFor, providerFlag } from '../providers.js';
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
  const inputs = asUsageError(() => resolveInputs(workflow.spec.inputs ?? {}, given), InputError);
  const history = sessions.map((record) => recordedRunOf(record.effective));
  const estimate = await estimateOf(workflow, inputs, options, history);
  if (format === 'json') process.stdout.write(`${printableJson(estimate)}\n`);
  else if (format === 'markdown') process.stdout.write(`${estimateMarkdown(estimate).join('\n')}\n`);
  else process.stdout.write(estimateText(estimate, file));
  return 0;
}

export async function estimateOf(
  workflow: Workflow,
  inputs: Record<string, string | number | boolean>,
  options: Omit<EstimateOptions, 'input' | 'from' | 'format'>,
  history: ReturnType<typeof recordedRunOf>[],
): Promise<Estimate> {
  const workspace = options.workspace ?? process.cwd();
  if (!existsSync(workspace)) throw new UsageError(`the workspace directory ${workspace} does not exist`);
  const providerOverride = providerFlag(options.provider);
  const counter = await counterOf(workflow, options);
  let countFailed = false;
  const { scope, mcp, perItem, forEachWorkflow } = await scopeOf(workflow, inputs, options.setup, workspace, history[0]?.setup);
  try {
    const { groups, cacheTtl } = estimatedTeam(
      workflow,
      forEachWorkflow,
      scope,
      { ...options, ...(providerOverride ? { providerOverride } : {}) },
      mcp,
      perItem,
    );
    const limits = workflow.limits;
    const accounting = new Accounting(
      () => limits,
      workflow.spec.pricing,
      () => {},
      process.env.CLOUD_ML_REGION,
      cacheTtl,
    );
    return await estimateRun({
      limits,
      groups,
      firstMessage: firstMessageOf(workflow, scope),
      count: (request, provider) =>
        counter?.countTokens(request, provider).catch((e: unknown) => {
          if (!countFailed) warning(`the API could not count tokens (${(e as Error).message}): prompts are estimated from their length`);
          countFailed = true;
          return undefined;
        }) ?? Promise.resolve(undefined),
      price: (model, provider, batch) => accounting.priceOf(model, provider, batch),
      history,
    });
  } finally {
    await mcp?.close();
  }
}

/**
 * The team an estimate prices: every group of agents, each profile as a run of these inputs would
 * build it (`forEachWorkflow`: a for_each over setup's unknown output given one stand-in item).
 */
export function estimatedTeam(
  workflow: Workflow,
  forEachWorkflow: Workflow,
  scope: Scope,
  options: { model?: string; providerOverride?: ProviderName; batch?: boolean },
  mcp?: import('../../agents/tools/mcp.js').McpToolbox,
  perItem: ReadonlySet<string> = new Set(),
) {
  const { cacheTtl, sharedTools } = promptLayoutOf(workflow.spec, false, { cacheTtl: undefined, sharedTools: undefined });
  const expanded = expandTeam(forEachWorkflow, scope);
  const given = {
    workflow: forEachWorkflow,
    scope,
    ...(options.model ? { modelOverride: options.model } : {}),
    ...(options.providerOverride ? { providerOverride: options.providerOverride } : {}),
    ...(options.batch ? { batchOverride: true } : {}),
    ...(mcp ? { mcp } : {}),
    cacheTtl,
    ...teamContext(workflow, scope),
  };
  return { groups: estimateGroups(withTeamTools(given, expanded, sharedTools), expanded, perItem), cacheTtl };
}

/** The providers' token counting; none (prompts estimated from their length) when no credentials are set. */
async function counterOf(workflow: Workflow, options: Pick<EstimateOptions, 'provider' | 'batch'>): Promise<Provider | undefined> {
  try {
    const connections = await connectionsFor(workflow.spec, options, true);
    return connections && new Provider({ connections, maxRetries: CALL_RETRIES, requestTimeoutMs: REQUEST_TIMEOUT_MS });
  } catch (e) {
    if (!(e instanceof MissingCredentials)) throw e;
    warning(`${e.message.split(/\.(\s|$)/)[0]}: prompts are estimated from their length instead of counted`);
    return undefined;
  }
}

/**
 * The scope prompts are filled from: setup run as a run would (its MCP servers started, for
 * their tools' definitions), or skipped with --no-setup: then each step's output is what the
 * first `--from` session recorded, or empty, and a `for_each` over setup's output with no
 * recorded output is shown per item.
 */
export async function scopeOf(
  workflow: Workflow,
  inputs: Record<string, string | number | boolean>,
  setup: boolean,
  workspace: string,
  recorded: Record<string, string> = {},
): Promise<{ scope: Scope; mcp?: import('../../agents/tools/mcp.js').McpToolbox; perItem: Set<string>; forEachWorkflow: Workflow }> {
  const identity = { runId: 'estimate', sessionPath: '' };
  if (setup) {
    const journal = new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) });
    const done = await runSetup({
      workflow,
      inputs,
      identity,
      place: { workspace, env: process.env },
      recording: { journal, limits: workflow.limits },
      cwd: workspace,
      signal: new AbortController().signal,
      progress: (event) => (event.type === 'warning' ? warning(event.message) : undefined),
    });
    return { scope: done.scope, ...(done.tools.mcp ? { mcp: done.tools.mcp } : {}), perItem: new Set(), forEachWorkflow: workflow };
  }
  const outputs = { ...Object.fromEntries((workflow.spec.setup ?? []).map((step) => [step.id, ''])), ...recorded };
  const scope: Scope = { ...baseScope(workflow, inputs, identity.runId, identity.sessionPath), env: {}, setup: outputs, github: {} };
  const perItem = new Set(
    Object.entries(workflow.spec.agents)
      .filter(([, a]) => typeof a.for_each === 'string' && /\bsetup\s*\./.test(a.for_each) && Object.keys(recorded).length === 0)
      .map(([name]) => name),
  );
  const agents = Object.fromEntries(Object.entries(workflow.spec.agents).map(([name, a]) => [name, perItem.has(name) ? { ...a, for_each: ['(an item)'] } : a]));
  return { scope, perItem, forEachWorkflow: { ...workflow, spec: { ...workflow.spec, agents } } };
}

/** An earlier session of the same workflow, read as `show` reads it. */
function sessionOf(path: string, workflow: Workflow): SessionRecord {
  const record = asUsageError(() => readSession(path), SessionFileError);
  const name = record.effective.find((e) => e.type === 'run_started')?.workflow;
  if (name !== undefined && name !== workflow.spec.name)
    throw new UsageError(`--from ${path} is a session of the workflow "${name}", not of "${workflow.spec.name}": its turns say nothing of this one`);
  return record;
}
