import { modelInfo, type Price } from './models.js';

/** How long the prompt cache keeps a write (the workflow's `cache: { ttl }`). */
export type CacheTtl = '5m' | '1h';

export type { Price } from './models.js';

/**
 * The price of `model`: the workflow's own `pricing` (exact name, then longest prefix; `given`),
 * then the table.
 */
export function priceOf(model: string, overrides: Readonly<Record<string, Price>> = {}): { price: Price; known: boolean; given: boolean } {
  const key = Object.keys(overrides)
    .filter((k) => model === k || model.startsWith(k))
    .sort((a, b) => b.length - a.length)[0];
  if (key !== undefined) return { price: overrides[key]!, known: true, given: true };
  const { price, known } = modelInfo(model);
  return { price, known, given: false };
}

/**
 * The price as a run whose breakpoints all keep `ttl` pays it: every cache write at that ttl's
 * price (conclave marks every breakpoint of a run with the workflow's one ttl).
 */
export function priceAtTtl(price: Price, ttl: CacheTtl): Price {
  if (ttl === '5m') return price;
  const hour = (p: Omit<Price, 'long'>) => ({ ...p, cache_write: p.cache_write_1h ?? p.input * 2 });
  return { ...hour(price), ...(price.long ? { long: { ...hour(price.long), over: price.long.over } } : {}) };
}

/** A call answered through the Message Batches API costs this share of its price, every token of it. */
export const BATCH_PRICE = 0.5;
/** Fast mode (`speed: fast`) costs six times the standard price of every token (docs/api-controls.md). */
export const FAST_PRICE = 6;

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export const NO_USAGE: TokenUsage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

/** An answer's usage as conclave counts it: the four figures, none missing. */
export function usageOf(usage: Partial<Record<keyof TokenUsage, number | null>> | undefined | null): TokenUsage {
  if (!usage) return NO_USAGE;
  return {
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
  };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_creation_input_tokens: a.cache_creation_input_tokens + b.cache_creation_input_tokens,
    cache_read_input_tokens: a.cache_read_input_tokens + b.cache_read_input_tokens,
  };
}

export function costOf(usage: TokenUsage, base: Price): number {
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  const price = base.long && prompt > base.long.over ? base.long : base;
  const perToken = (dollarsPerMillion: number) => dollarsPerMillion / 1_000_000;
  return (
    usage.input_tokens * perToken(price.input) +
    usage.output_tokens * perToken(price.output) +
    usage.cache_creation_input_tokens * perToken(price.cache_write ?? price.input * 1.25) +
    usage.cache_read_input_tokens * perToken(price.cache_read ?? price.input * 0.1)
  );
}

/**
 * What the prompt cache saved on a call: its cost with no cache (every prompt token at the input
 * price) less its cost; negative when it wrote more than it read.
 */
export function cacheSavingUsd(usage: TokenUsage, price: Price): number {
  const cached = usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
  if (cached === 0) return 0;
  const uncached = { ...usage, input_tokens: usage.input_tokens + cached, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  return costOf(uncached, price) - costOf(usage, price);
}

/** What the prompt cache saved on a recorded call, at the table's list price of `model` (`show` and traces, which read a session). */
export function listCacheSavingUsd(
  usage: { input_tokens?: number | null; output_tokens?: number | null; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null },
  model: string,
  ttl: CacheTtl,
): number {
  const tokens = {
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
  };
  return cacheSavingUsd(tokens, priceAtTtl(priceOf(model).price, ttl));
}

/** Every token the call was billed for, as limits.max_tokens_total counts them. */
export function totalTokens(usage: TokenUsage): number {
  return usage.input_tokens + usage.output_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
}

/**
 * Tokens a request's input can be at most, from its size: two bytes of JSON a token, about twice
 * the density of English or code in Claude's tokenizer, so that a reservation is never short.
 */
export function inputTokensAtMost(requestBytes: number): number {
  return Math.ceil(requestBytes / 2);
}

/**
 * The most a call can cost (docs/design.md: limits): its input at the dearest input rate (a cache write, or
 * the long-prompt tier) plus `max_tokens` of output.
 */
export function worstCaseCost(inputTokens: number, maxTokens: number, base: Price): number {
  const price = base.long && inputTokens > base.long.over ? base.long : base;
  const inputRate = Math.max(price.input, price.cache_write ?? price.input * 1.25, base.input, base.cache_write ?? base.input * 1.25);
  return (inputTokens * inputRate + maxTokens * Math.max(price.output, base.output)) / 1_000_000;
}
