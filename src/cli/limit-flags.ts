import { durationMs, durationProblem, type Limits } from '../workflow/limits.js';
import { UsageError } from './usage-error.js';

/** The limit flags of `run` and `resume`, as commander gives them. */
export interface LimitFlags {
  budgetUsd?: string;
  maxTurns?: string;
  maxTurnsPerAgent?: string;
  maxTokensTotal?: string;
  timeout?: string;
  maxEstimateUsd?: string;
}

/** `limits` with the flags applied; a UsageError says which flag is not a valid value. */
export function withLimitFlags(limits: Limits, flags: LimitFlags): Limits {
  const next = { ...limits };
  if (flags.budgetUsd !== undefined) {
    const budget = Number(flags.budgetUsd);
    if (flags.budgetUsd.trim() === '' || !Number.isFinite(budget) || budget <= 0) {
      throw new UsageError(`--budget-usd must be a number of dollars above 0; got ${JSON.stringify(flags.budgetUsd)}`);
    }
    next.budgetUsd = budget;
  }
  if (flags.maxEstimateUsd !== undefined) {
    const most = Number(flags.maxEstimateUsd);
    if (flags.maxEstimateUsd.trim() === '' || !Number.isFinite(most) || most <= 0) {
      throw new UsageError(`--max-estimate-usd must be a number of dollars above 0; got ${JSON.stringify(flags.maxEstimateUsd)}`);
    }
    next.maxEstimateUsd = most;
  }
  if (flags.maxTurns !== undefined) next.maxTurns = count('--max-turns', flags.maxTurns);
  if (flags.maxTurnsPerAgent !== undefined) next.maxTurnsPerAgent = count('--max-turns-per-agent', flags.maxTurnsPerAgent);
  if (flags.maxTokensTotal !== undefined) next.maxTokensTotal = count('--max-tokens-total', flags.maxTokensTotal, 'tokens');
  if (flags.timeout !== undefined) {
    const value = flags.timeout.trim();
    let ms: number;
    try {
      ms = durationMs(/^\d+(\.\d+)?$/.test(value) ? Number(value) : value);
    } catch {
      throw new UsageError(`--timeout must be a duration such as 90s, 15m or 1h, or a number of seconds; got ${JSON.stringify(flags.timeout)}`);
    }
    const problem = durationProblem(ms);
    if (problem) throw new UsageError(`--timeout ${problem}; got ${JSON.stringify(flags.timeout)}`);
    next.timeoutMs = ms;
  }
  return next;
}

function count(flag: string, value: string, of = 'turns'): number {
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`${flag} must be a whole number of ${of}, at least 1; got ${JSON.stringify(value)}`);
  return n;
}
