import type { ModelRequest, ModelResponse } from './messages.js';

/**
 * The Messages API's newer controls (docs/api-controls.md): the beta header each needs, read from
 * the request itself, so that a request and the headers it leaves with never disagree; and what
 * an answer says of them.
 */

/** A fallback chain of models the workflow names. */
export const FALLBACK_LIST_BETA = 'server-side-fallback-2026-06-01';
/** `fallbacks: default`: the API's own choice of model by the refusal's category. */
export const FALLBACK_DEFAULT_BETA = 'server-side-fallback-2026-07-01';
export const TASK_BUDGET_BETA = 'task-budgets-2026-03-13';
export const COMPACTION_BETA = 'compact-2026-09-04';
export const FAST_MODE_BETA = 'fast-mode-2026-02-01';

/** The controls a request may carry beyond the SDK's typed parameters. */
export interface ControlledRequest {
  fallbacks?: 'default' | readonly { model: string }[];
  speed?: 'standard' | 'fast';
  compaction?: { type: 'summarize'; instructions?: string };
  output_config?: { effort?: string; task_budget?: { type: 'tokens'; total: number; remaining?: number } };
}

/** The beta headers `request` needs, in a fixed order; none for a request that uses no beta control. */
export function betasOf(request: ModelRequest): string[] {
  const r = request as ModelRequest & ControlledRequest;
  const betas: string[] = [];
  if (r.fallbacks !== undefined) betas.push(r.fallbacks === 'default' ? FALLBACK_DEFAULT_BETA : FALLBACK_LIST_BETA);
  if (r.output_config?.task_budget !== undefined) betas.push(TASK_BUDGET_BETA);
  if (r.compaction !== undefined) betas.push(COMPACTION_BETA);
  if (r.speed === 'fast') betas.push(FAST_MODE_BETA);
  return betas;
}

/** The request as the free token-counting endpoint takes it: without the controls that change how it is answered, not what it reads. */
export function countedOf<T extends ModelRequest>(request: T): T {
  const { fallbacks: _f, speed: _s, compaction: _c, ...rest } = request as T & ControlledRequest;
  const config = (rest as ControlledRequest).output_config;
  if (config?.task_budget === undefined) return rest as T;
  const { task_budget: _t, ...own } = config;
  const { output_config: _o, ...without } = rest as ControlledRequest & Record<string, unknown>;
  return (Object.keys(own).length ? { ...without, output_config: own } : without) as T;
}

/**
 * The model that answered when it is not the one asked: a server-side fallback (the request named
 * fallbacks and the message names another model). Undefined when the request's own model answered.
 */
export function answeredBy(request: ModelRequest, response: ModelResponse): string | undefined {
  if ((request as ControlledRequest).fallbacks === undefined) return undefined;
  const model = (response as { model?: unknown }).model;
  return typeof model === 'string' && model !== '' && model !== request.model ? model : undefined;
}

/** What a refusal says of itself (`stop_details`): the policy area, and a model the API suggests; null when it names none. */
export interface RefusalDetails {
  category: string | null;
  recommended: string | null;
}

export function refusalDetails(response: ModelResponse): RefusalDetails {
  const details = (response as { stop_details?: unknown }).stop_details;
  const field = (name: string) => {
    const v = details !== null && typeof details === 'object' ? (details as Record<string, unknown>)[name] : undefined;
    // A name the API gives is shown to the user: kept short and on one line.
    return typeof v === 'string' && /^[\w.:@/-]{1,100}$/.test(v) ? v : null;
  };
  return { category: field('category'), recommended: field('recommended_model') };
}

/** The speed a call ran at, as its usage says (`fast` is priced apart); `standard` when it says nothing. */
export function speedOf(response: ModelResponse): 'standard' | 'fast' {
  return (response.usage as { speed?: unknown } | undefined)?.speed === 'fast' ? 'fast' : 'standard';
}
