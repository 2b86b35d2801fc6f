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
export const DEFAULT_MAX_TOKENS = 4096;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const UNIT_BYTES: Record<string, number> = { B: 1, KB: 1024, MB: 1024 * 1024 };

/** `90s`, `15m`, `1.5h`, `250ms`, or a number of seconds, in milliseconds. */
export function durationMs(value: string | number): number {
  if (typeof value === 'number') return value * 1000;
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$/.exec(value);
  if (!match) throw new Error(`not a duration: ${value}`);
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/** `65536`, `64KB` or `1MB`, in bytes. */
export function sizeBytes(value: string | number): number {
  if (typeof value === 'number') return value;
  const match = /^([0-9]+)(B|KB|MB)$/.exec(value);
  if (!match) throw new Error(`not a size: ${value}`);
  return Number(match[1]) * UNIT_BYTES[match[2]!]!;
}

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
