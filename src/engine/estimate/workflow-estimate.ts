import type { McpToolbox } from '../../agents/tools/mcp.js';
import type { ProviderName } from '../../provider/clouds.js';
import type { Scope } from '../../workflow/evaluate.js';
import type { Workflow } from '../../workflow/load.js';
import type { CacheTtl, Scalar } from '../../workflow/types.js';
import type { ModelRequest } from '../../provider/messages.js';
import { Accounting } from '../ceilings/accounting.js';
import { promptLayoutOf } from '../prompt-cache/prompt-layout.js';
import { Journal } from '../replay/journal.js';
import { baseScope, runSetup } from '../setup.js';
import { teamSources, type TeamOverrides } from '../teams/team.js';
import { estimateRun, type Estimate } from './estimate.js';
import type { RecordedRun } from './estimate-history.js';
import { estimateGroups, firstMessageOf } from './estimate-team.js';
import type { EstimateGroup } from './estimate-likely.js';

/** What `conclave estimate` (and an experiment's plan) prices a workflow with. */
export interface WorkflowEstimateOptions {
  workflow: Workflow;
  inputs: Record<string, Scalar>;
  /** Setup run as a run would run it; false (`--no-setup`): each step's output as the first earlier session recorded it, or empty. */
  setup: boolean;
  workspace: string;
  overrides: TeamOverrides;
  /** The providers the run would reach: no setup step's tool environment holds their credentials. */
  providers: readonly ProviderName[];
  /** Earlier sessions of the workflow (`--from`). */
  history: readonly RecordedRun[];
  /** The API's free token counting; undefined where it cannot count (the prompt's length stands in). */
  count(request: ModelRequest, provider: ProviderName): Promise<number | undefined>;
  warn(message: string): void;
}

/**
 * What a run of the workflow will cost, before it runs (docs/pricing.md: before a run): its scope
 * made as the run would make it, its team assembled as the run assembles it, each agent's first
 * request counted and priced once.
 */
export async function estimateWorkflow(options: WorkflowEstimateOptions): Promise<Estimate> {
  const { workflow } = options;
  const { scope, mcp, perItem, forEachWorkflow } = await estimateScope(options, options.history[0]?.setup);
  try {
    const { groups, cacheTtl } = estimatedTeam({ workflow, forEachWorkflow, scope, overrides: options.overrides, mcp, perItem });
    const limits = workflow.limits;
    const accounting = new Accounting(() => limits, { pricing: workflow.spec.pricing, vertexRegion: process.env.CLOUD_ML_REGION, cacheTtl });
    return await estimateRun({
      limits,
      groups,
      firstMessage: firstMessageOf(workflow, scope),
      count: options.count,
      price: (model, provider, batch) => accounting.priceOf(model, provider, batch),
      history: options.history,
    });
  } finally {
    await mcp?.close();
  }
}

/**
 * The team an estimate prices: every group of agents, each profile as a run of these inputs would
 * build it (`forEachWorkflow`: a for_each over setup's unknown output given one stand-in item).
 */
export function estimatedTeam(given: {
  workflow: Workflow;
  forEachWorkflow: Workflow;
  scope: Scope;
  overrides: TeamOverrides;
  mcp?: McpToolbox;
  perItem?: ReadonlySet<string>;
}): { groups: EstimateGroup[]; cacheTtl: CacheTtl } {
  const layout = promptLayoutOf(given.workflow, false, { cacheTtl: undefined, sharedTools: undefined });
  const { sources, expanded } = teamSources({ workflow: given.forEachWorkflow, scope: given.scope, overrides: given.overrides, mcp: given.mcp, layout });
  return { groups: estimateGroups(sources, expanded, given.perItem), cacheTtl: layout.cacheTtl };
}

/**
 * The scope prompts are filled from: setup run as a run would (its MCP servers started, for
 * their tools' definitions), or skipped: then each step's output is what the first earlier
 * session recorded, or empty, and a `for_each` over setup's output with no recorded output is
 * shown per item.
 */
export async function estimateScope(
  options: Pick<WorkflowEstimateOptions, 'workflow' | 'inputs' | 'setup' | 'workspace' | 'providers' | 'warn'>,
  recorded: Record<string, string> = {},
): Promise<{ scope: Scope; mcp?: McpToolbox; perItem: Set<string>; forEachWorkflow: Workflow }> {
  const { workflow, inputs, workspace } = options;
  const identity = { runId: 'estimate', sessionPath: '', providers: options.providers };
  if (options.setup) {
    const journal = new Journal({ write: () => {}, sync: () => {}, lineOf: (e) => JSON.stringify(e) });
    const done = await runSetup({
      workflow,
      inputs,
      identity,
      place: { workspace, env: process.env },
      recording: { journal, limits: workflow.limits },
      cwd: workspace,
      signal: new AbortController().signal,
      progress: (event) => (event.type === 'warning' ? options.warn(event.message) : undefined),
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
