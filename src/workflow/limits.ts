import type { LimitsSpec } from './types.js';

/** The limits a run enforces, with every value resolved. */
export interface Limits {
  timeoutMs: number;
  maxTurns: number;
  maxTurnsPerAgent: number;
  budgetUsd: number;
  /** Infinity when the workflow sets none. */
  maxTokensTotal: number;
  concurrency: number;
  /** `--max-estimate-usd`: the run does not start when its likely cost is over this (docs/pricing.md: before a run). */
  maxEstimateUsd?: number;
}

export const DEFAULT_LIMITS: Limits = {
  timeoutMs: 30 * 60_000,
  maxTurns: 100,
  maxTurnsPerAgent: 25,
  budgetUsd: 5,
  maxTokensTotal: Infinity,
  concurrency: 4,
};

export const DEFAULT_MODEL = 'claude-sonnet-5-5';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const UNIT_BYTES: Record<string, number> = { B: 1, KB: 1024, MB: 1024 * 1024 };

/** The longest wait Node's timers can hold (2^31 - 1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** `90s`, `15m`, `1.5h`, `250ms`, or a number of seconds, in milliseconds. */
export function durationMs(value: string | number): number {
  if (typeof value === 'number') return value * 1000;
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$/.exec(value);
  if (!match) throw new Error(`not a duration: ${value}`);
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/** What is wrong with a duration as a time limit, or undefined: it must be at least 1 ms and fit a timer. */
export function durationProblem(ms: number): string | undefined {
  if (!(ms >= 1)) return 'must be at least 1ms';
  if (ms > MAX_DURATION_MS) return `must be at most ${Math.floor(MAX_DURATION_MS / 3_600_000)}h (the longest a timer can wait)`;
  return undefined;
}

/** `65536`, `64KB` or `1MB`, in bytes. */
export function sizeBytes(value: string | number): number {
  if (typeof value === 'number') return value;
  const match = /^([0-9]+)(B|KB|MB)$/.exec(value);
  if (!match) throw new Error(`not a size: ${value}`);
  return Number(match[1]) * UNIT_BYTES[match[2]!]!;
}

/** Agents in a run, declared and spawned, unless `limits.max_agents` says otherwise (or the file declares more). */
export const DEFAULT_MAX_AGENTS = 64;

/** `limits.max_agents`, or its default: 64, or as many as the file declares when it declares more. */
export function maxAgentsOf(spec: { limits?: LimitsSpec; agents: Record<string, unknown> }): number {
  return spec.limits?.max_agents ?? Math.max(DEFAULT_MAX_AGENTS, Object.keys(spec.agents).length);
}
/** How deep spawned agents nest below a declared one, unless `limits.max_depth` says otherwise. */
export const DEFAULT_MAX_DEPTH = 3;

export function resolveLimits(spec: LimitsSpec = {}): Limits {
  return {
    timeoutMs: spec.timeout === undefined ? DEFAULT_LIMITS.timeoutMs : durationMs(spec.timeout),
    maxTurns: spec.max_turns ?? DEFAULT_LIMITS.maxTurns,
    maxTurnsPerAgent: spec.max_turns_per_agent ?? DEFAULT_LIMITS.maxTurnsPerAgent,
    budgetUsd: spec.budget_usd ?? DEFAULT_LIMITS.budgetUsd,
    maxTokensTotal: spec.max_tokens_total ?? DEFAULT_LIMITS.maxTokensTotal,
    concurrency: spec.concurrency ?? DEFAULT_LIMITS.concurrency,
  };
}

/** `15m`, `2h`, `90s` or `250ms`: a duration as the workflow would write it. */
export function describeDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** Each limit the tighter of the two: a resume goes on with no limit looser than the workflow's, unless a flag raises it. */
export function tighterLimits(a: Limits, b: Limits): Limits {
  const next = { ...a };
  for (const key of Object.keys(a) as (keyof Limits)[]) next[key] = Math.min(a[key] ?? Infinity, b[key] ?? Infinity);
  return next;
}

/** What is wrong with limits read from a session file (which anyone may have written), or undefined. */
export function limitsProblem(limits: Limits): string | undefined {
  for (const key of ['maxTurns', 'maxTurnsPerAgent', 'concurrency'] as const) {
    if (!Number.isSafeInteger(limits[key]) || limits[key] < 1) return `${key} is ${limits[key]}, not a whole number of at least 1`;
  }
  if (!(limits.budgetUsd > 0) || !Number.isFinite(limits.budgetUsd)) return `budgetUsd is ${limits.budgetUsd}, not an amount above 0`;
  if (!(limits.maxTokensTotal >= 1)) return `maxTokensTotal is ${limits.maxTokensTotal}, not a number of at least 1`;
  const timeout = durationProblem(limits.timeoutMs);
  return timeout ? `timeoutMs ${timeout}` : undefined;
}
