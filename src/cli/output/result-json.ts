import type { RunResult } from '../../engine/run-options.js';

/** The run's result as `--json` prints it: one object, money rounded to a millionth of a dollar. */
export function resultJson(result: RunResult, session: string) {
  return {
    status: result.status,
    exit_code: result.exitCode,
    reason: result.reason,
    summary: result.summary,
    outputs: result.outputs,
    output_errors: result.outputErrors,
    usage: { ...result.usage.usage, cost_usd: round(result.usage.costUsd), cache_misses: result.cacheMisses },
    // What this process paid: a resume or replay pays nothing for the answers it took from the recording.
    paid_usd: round(result.paidUsd),
    ...(result.fallbacks.length ? { fallbacks: result.fallbacks } : {}),
    from_cache: { answers: result.cached.calls, tokens: result.cached.tokens },
    prompt_cache: { ...result.promptCache, saved_usd: round(result.promptCache.saved_usd) },
    ...(result.batches
      ? {
          batches: {
            ...result.batches,
            saved_usd: round(result.batches.saved_usd),
            ...(result.batches.reserved_usd !== undefined ? { reserved_usd: round(result.batches.reserved_usd) } : {}),
          },
        }
      : {}),
    agents: Object.fromEntries(
      Object.entries(result.agents).map(([name, a]) => [name, { turns: a.turns, calls: a.spend.calls, ...a.spend.usage, cost_usd: round(a.spend.costUsd) }]),
    ),
    proposals: result.proposals.map((p) => ({ id: p.id, question: p.question, status: p.status, winner: p.winner, tally: p.tally })),
    ...(Object.keys(result.documents).length ? { documents: result.documents } : {}),
    ...(result.waitingFor ? { waiting_for: result.waitingFor } : {}),
    ...(result.divergence ? { divergence: result.divergence } : {}),
    session,
  };
}

function round(n: number): number {
  return Number(n.toFixed(6));
}
