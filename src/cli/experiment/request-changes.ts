import { request } from '../../agents/request.js';
import { firstMessageOf } from '../../engine/estimate/estimate-team.js';
import { InputError, resolveInputs } from '../../engine/inputs.js';
import type { Workflow } from '../../workflow/load.js';
import { estimatedTeam, estimateScope } from '../../engine/estimate/workflow-estimate.js';
import { asUsageError } from '../usage-error.js';

/**
 * What an edit touches, found for nothing (docs/experiments.md: free first): each agent's first
 * request rendered offline in both versions, for each case's inputs (no setup step run, no
 * request made), and compared; and the workflow's settings that no first request shows (limits,
 * setup, outputs). Comments and layout are not part of either: an edit of them changes nothing.
 */

export interface RequestChange {
  /** The agent whose first request differs; null: a setting of the workflow outside the agents' requests. */
  agent: string | null;
  /** The first JSON path that differs, such as `system[1].text`. */
  path: string;
  /** The case it was found in first. */
  case: string;
}

export interface ComparedCase {
  name: string;
  inputs: Record<string, string>;
}

/** Every agent's and the workflow's first difference between the versions, over the cases; none: the edit changes nothing a run would send. */
export async function requestChanges(
  base: Workflow,
  head: Workflow,
  cases: readonly ComparedCase[],
  workspaces: { base: string; head: string },
): Promise<RequestChange[]> {
  const changes = new Map<string | null, RequestChange>();
  for (const testCase of cases) {
    const [before, after] = await Promise.all([
      renderedRequests(base, testCase.inputs, workspaces.base),
      renderedRequests(head, testCase.inputs, workspaces.head),
    ]);
    for (const agent of new Set([...before.keys(), ...after.keys()])) {
      if (changes.has(agent)) continue;
      const path = firstDifference(before.get(agent) ?? null, after.get(agent) ?? null);
      if (path !== undefined) changes.set(agent, { agent, path: path || '(the whole request: the agent is in one version only)', case: testCase.name });
    }
  }
  if (changes.size === 0) {
    const path = firstDifference(base.spec, head.spec);
    if (path !== undefined) changes.set(null, { agent: null, path, case: cases[0]?.name ?? '' });
  }
  return [...changes.values()];
}

/** Each agent's first request (a template's first instance's) for these inputs, by its name. */
async function renderedRequests(workflow: Workflow, given: Record<string, string>, workspace: string): Promise<Map<string, unknown>> {
  const pairs = Object.entries(given).map(([name, value]) => `${name}=${value}`);
  const inputs = asUsageError(() => resolveInputs(workflow.spec.inputs ?? {}, pairs), InputError);
  const { scope, perItem, forEachWorkflow } = await estimateScope({ workflow, inputs, setup: false, workspace, providers: [], warn: () => {} });
  const { groups } = estimatedTeam({ workflow, forEachWorkflow, scope, overrides: {}, perItem });
  const first = firstMessageOf(workflow, scope);
  return new Map(
    groups.flatMap((g) =>
      g.profiles.map((profile) => [
        profile.name,
        JSON.parse(JSON.stringify(request(profile, [{ role: 'user', content: [{ type: 'text', text: first(profile) }] }]))),
      ]),
    ),
  );
}

/** The first JSON path at which two values differ ('' for the values themselves), or undefined when they are equal. */
export function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (Object.is(a, b)) return undefined;
  const bothArrays = Array.isArray(a) && Array.isArray(b);
  const bothObjects = !bothArrays && isObject(a) && isObject(b);
  if (!bothArrays && !bothObjects) return path;
  const keys = bothArrays ? [...Array(Math.max(a.length, b.length)).keys()] : [...new Set([...Object.keys(a as object), ...Object.keys(b as object)])];
  for (const key of keys) {
    const at = typeof key === 'number' ? `${path}[${key}]` : `${path}${path ? '.' : ''}${key}`;
    const [x, y] = [(a as Record<string | number, unknown>)[key], (b as Record<string | number, unknown>)[key]];
    if (x === undefined && y === undefined) continue;
    const found = firstDifference(x, y, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
