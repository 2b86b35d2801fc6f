import type { Diagnostic } from './diagnostic.js';
import { DEFAULT_MODEL } from './limits.js';
import type { WorkflowSource } from './source.js';
import type { WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

// What the API takes where an agent's calls go: message batches and fallbacks only on Anthropic's
// API, and fallbacks never in a batch (docs/api-controls.md).

/**
 * `batch: true` for an agent or template whose calls go to a cloud: the Message Batches API is
 * Anthropic's alone here (docs/workflow.md: batch). Each place that sets it or inherits it,
 * with the provider that applies there (its own over the defaults', over the top level's).
 */
export function batchProblems(source: WorkflowSource, spec: WorkflowSpec, override?: string): Diagnostic[] {
  const [where, fix] = override ? [`--provider ${override}`, 'leave --provider out for this workflow'] : ['', 'use provider: anthropic for it'];
  return batchOnCloud(spec, override).map(({ path, provider }) =>
    source.error(
      source.valuePosition(path),
      `${path.slice(0, -1).join('.')} sends its calls as a message batch (batch: true), but ${where || `its provider is ${provider}`}: ` +
        `only Anthropic's API has the Message Batches API here; ${fix}, or batch: false`,
    ),
  );
}

/**
 * `fallbacks:` where the API cannot honour them (docs/api-controls.md): server-side fallback is
 * Anthropic's API's own and the Message Batches API does not take it; a fallback is another model
 * than the agent's own.
 */
export function fallbackProblems(source: WorkflowSource, spec: WorkflowSpec, override?: string): Diagnostic[] {
  const defaults: Record<string, unknown> = isRecord(spec.defaults) ? { ...spec.defaults } : {};
  const top = typeof spec.provider === 'string' ? spec.provider : 'anthropic';
  const out: Diagnostic[] = [];
  for (const group of ['agents', 'templates'] as const) {
    for (const [name, agent] of Object.entries(recordOf(spec[group]))) {
      if (!isRecord(agent)) continue;
      const fallbacks = agent.fallbacks ?? defaults.fallbacks;
      if (fallbacks === undefined) continue;
      const path = agent.fallbacks !== undefined ? [group, name, 'fallbacks'] : ['defaults', 'fallbacks'];
      const at = source.valuePosition(path);
      const who = `${group}.${name}`;
      const provider = override ?? agent.provider ?? defaults.provider ?? top;
      const model = agent.model ?? defaults.model ?? DEFAULT_MODEL;
      if (provider !== 'anthropic')
        out.push(source.error(at, `${who} has fallbacks, but its provider is ${String(provider)}: server-side fallback is Anthropic's API's own`));
      else if ((agent.batch ?? defaults.batch) === true)
        out.push(source.error(at, `${who} has fallbacks and batch: true: the Message Batches API does not take fallbacks; leave one of them out`));
      else if (Array.isArray(fallbacks) && fallbacks.includes(model))
        out.push(source.error(at, `${who}'s fallbacks name its own model ${String(model)}: a fallback is another model`));
    }
  }
  return out;
}

/** Where the workflow names fallbacks (`defaults.fallbacks`, `agents.NAME.fallbacks`…), the first place, if any. */
export function fallbacksAt(spec: WorkflowSpec): string | undefined {
  if (isRecord(spec.defaults) && spec.defaults.fallbacks !== undefined) return 'defaults.fallbacks';
  for (const group of ['agents', 'templates'] as const)
    for (const [name, agent] of Object.entries(recordOf(spec[group])))
      if (isRecord(agent) && agent.fallbacks !== undefined) return `${group}.${name}.fallbacks`;
  return undefined;
}

/** Whether any agent or template makes its calls through Message Batches (`batch: true`, its own or the defaults'). */
export function usesBatches(spec: WorkflowSpec): boolean {
  const defaults: Record<string, unknown> = isRecord(spec.defaults) ? { ...spec.defaults } : {};
  return (['agents', 'templates'] as const).some((group) =>
    Object.values(recordOf(spec[group])).some((agent) => isRecord(agent) && (agent.batch ?? defaults.batch) === true),
  );
}

/** The agents and templates with `batch: true` whose provider is a cloud, where the batch setting is written. */
export function batchOnCloud(spec: WorkflowSpec, override?: string): { path: (string | number)[]; provider: string }[] {
  const defaults: Record<string, unknown> = isRecord(spec.defaults) ? { ...spec.defaults } : {};
  const top = typeof spec.provider === 'string' ? spec.provider : 'anthropic';
  const out: { path: (string | number)[]; provider: string }[] = [];
  for (const group of ['agents', 'templates'] as const) {
    for (const [name, agent] of Object.entries(recordOf(spec[group]))) {
      if (!isRecord(agent)) continue;
      const batch = agent.batch ?? defaults.batch;
      const provider = override ?? agent.provider ?? defaults.provider ?? top;
      if (batch !== true || provider === 'anthropic' || typeof provider !== 'string') continue;
      out.push({ path: agent.batch === true ? [group, name, 'batch'] : ['defaults', 'batch'], provider });
    }
  }
  return out;
}
