import type { IncomingMessage } from 'node:http';

/**
 * The API's newer controls as the Messages API answers them (docs/api-controls.md): a model that
 * declines, server-side fallbacks, the beta headers each control needs, and the deprecated ones.
 */

/** A model that declines every request, as a safety classifier of the API may: `stop_reason: refusal`. */
export interface Declines {
  models: readonly string[];
  /** `stop_details.category` (null when the refusal maps to no named category). */
  category?: string | null;
  /** `stop_details.recommended_model`, and where `fallbacks: default` goes. */
  recommended?: string;
}

/** The beta header each control needs, as the API's docs name it. */
export const FALLBACK_LIST_BETA = 'server-side-fallback-2026-06-01';
export const FALLBACK_DEFAULT_BETA = 'server-side-fallback-2026-07-01';
export const TASK_BUDGET_BETA = 'task-budgets-2026-03-13';
export const COMPACTION_BETA = 'compact-2026-09-04';
export const FAST_MODE_BETA = 'fast-mode-2026-02-01';

export function betasOf(headers: IncomingMessage['headers']): string[] {
  const raw = headers['anthropic-beta'];
  return (Array.isArray(raw) ? raw.join(',') : (raw ?? ''))
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
}

type Body = Record<string, unknown> & { model: string };

/**
 * What the API refuses about the controls a request uses: each needs its beta header, as the
 * real API answers `400 … Extra inputs are not permitted` without it; a fallback list holds one to
 * three models, none of them the request's own.
 */
export function controlProblem(body: Body, betas: readonly string[]): string | undefined {
  const fallbacks = body.fallbacks;
  if (fallbacks !== undefined) {
    if (fallbacks === 'default') {
      if (!betas.includes(FALLBACK_DEFAULT_BETA)) return `fallbacks: "default" needs the ${FALLBACK_DEFAULT_BETA} beta`;
    } else {
      if (!betas.includes(FALLBACK_LIST_BETA)) return `fallbacks: Extra inputs are not permitted (the ${FALLBACK_LIST_BETA} beta)`;
      if (!Array.isArray(fallbacks) || fallbacks.length < 1 || fallbacks.length > 3) return 'fallbacks: a list of 1 to 3 models, or "default"';
      for (const [i, f] of fallbacks.entries()) {
        const model = (f as { model?: unknown } | null)?.model;
        if (typeof model !== 'string' || model === '') return `fallbacks.${i}.model: Field required`;
        if (model === body.model) return `fallbacks.${i}.model: the request's own model`;
      }
    }
  }
  const outputConfig = body.output_config as { task_budget?: { type?: unknown; total?: unknown; remaining?: unknown } } | undefined;
  const budget = outputConfig?.task_budget;
  if (budget !== undefined) {
    if (!betas.includes(TASK_BUDGET_BETA)) return `output_config.task_budget: Extra inputs are not permitted (the ${TASK_BUDGET_BETA} beta)`;
    if (budget.type !== 'tokens' || typeof budget.total !== 'number' || budget.total < 20_000)
      return 'output_config.task_budget: type tokens, total at least 20000';
    if (budget.remaining !== undefined && (typeof budget.remaining !== 'number' || budget.remaining < 0 || budget.remaining > budget.total))
      return 'output_config.task_budget.remaining: between 0 and total';
  }
  if (body.compaction !== undefined) {
    if (!betas.includes(COMPACTION_BETA)) return `compaction: Extra inputs are not permitted (the ${COMPACTION_BETA} beta)`;
    if ((body.compaction as { type?: unknown } | null)?.type !== 'summarize') return 'compaction.type: Input should be "summarize"';
  }
  if (body.speed !== undefined) {
    if (body.speed !== 'fast' && body.speed !== 'standard') return 'speed: Input should be "standard" or "fast"';
    if (body.speed === 'fast' && !betas.includes(FAST_MODE_BETA)) return `speed: "fast" needs the ${FAST_MODE_BETA} beta`;
  }
  return undefined;
}

/** The model that answers a request to a declining model: its first fallback that does not decline, or none. */
export function fallbackModel(body: Body, declines: Declines): string | undefined {
  const fallbacks = body.fallbacks;
  const chain = fallbacks === 'default' ? [declines.recommended ?? 'claude-opus-5'] : Array.isArray(fallbacks) ? fallbacks.map((f) => String(f.model)) : [];
  return chain.find((m) => !declines.models.includes(m));
}

/** A refusal as the API gives it: no content, `stop_details` naming the category and a model that may answer. */
export function refusalOf(declines: Declines, inputTokens: number) {
  return {
    content: [],
    stop_reason: 'refusal',
    stop_details: {
      type: 'refusal',
      category: declines.category === undefined ? 'cyber' : declines.category,
      explanation: 'This request was declined by a safety classifier.',
      recommended_model: declines.recommended ?? 'claude-opus-5',
    },
    // A request refused before any output is not billed for output.
    usage: { input_tokens: inputTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}
