/**
 * US dollars per million tokens. Cache writes and reads default to the API's multiples of the
 * input price: a write kept 5 minutes 1.25×, kept an hour 2×, a read 0.1×.
 */
export interface Price {
  input: number;
  output: number;
  /** A prompt cache write kept 5 minutes. */
  cache_write?: number;
  /** A prompt cache write kept an hour (`cache: { ttl: 1h }`). */
  cache_write_1h?: number;
  cache_read?: number;
  /** Prices for calls whose prompt is longer than `over` tokens. */
  long?: { over: number } & Omit<Price, 'long'>;
}

/**
 * How a model thinks: `adaptive` (it decides when and how much, steered by effort), `budget`
 * (extended thinking with a fixed budget of tokens), or `none`.
 */
export type Thinking = 'adaptive' | 'budget' | 'none';

export interface ModelInfo {
  family: string;
  /** Its context window, in tokens. */
  window: number;
  /** The most output tokens one call may ask for. */
  maxOutput: number;
  thinking: Thinking;
  /** The shortest prefix the prompt cache keeps, in tokens: a shorter one is neither written nor read. */
  cacheMin: number;
  /** US dollars per million tokens (docs/pricing.md). */
  price: Price;
  /** Bedrock and Vertex charge 10% more on a regional endpoint (Claude Sonnet 4.5 and later models). */
  regionalPremium: boolean;
}

/**
 * The models conclave knows, by name, most specific first (docs/models.md, from the model pages
 * of platform.claude.com in November 2026). An unknown model is treated as the most expensive
 * one with a 200,000-token window, so that neither its cost nor its room is overestimated.
 */
export const MODEL_TABLE: readonly (Omit<ModelInfo, 'regionalPremium'> & { pattern: RegExp; regionalPremium?: false })[] = [
  {
    family: 'Claude Fable 5',
    pattern: /fable/,
    window: 1_000_000,
    maxOutput: 128_000,
    thinking: 'adaptive',
    cacheMin: 4_096,
    price: { input: 10, output: 50 },
  },
  {
    family: 'Claude Opus 5.5',
    pattern: /opus-(5-[5-9]|[6-9])/,
    window: 1_000_000,
    maxOutput: 128_000,
    thinking: 'adaptive',
    cacheMin: 4_096,
    price: { input: 4, output: 20 },
  },
  {
    family: 'Claude Opus 4.6 to 5',
    pattern: /opus-(4-[6-9]|5)/,
    window: 1_000_000,
    maxOutput: 128_000,
    thinking: 'adaptive',
    cacheMin: 4_096,
    price: { input: 5, output: 25 },
  },
  { family: 'Claude Opus 4.5', pattern: /opus-4-5/, window: 200_000, maxOutput: 64_000, thinking: 'budget', cacheMin: 4_096, price: { input: 5, output: 25 } },
  {
    family: 'Claude Opus 3 to 4.1',
    pattern: /opus/,
    window: 200_000,
    maxOutput: 32_000,
    thinking: 'budget',
    cacheMin: 1_024,
    price: { input: 15, output: 75 },
    regionalPremium: false,
  },
  {
    family: 'Claude Sonnet 5 and 5.5',
    pattern: /sonnet-[5-9]/,
    window: 1_000_000,
    maxOutput: 128_000,
    thinking: 'adaptive',
    cacheMin: 2_048,
    price: { input: 2, output: 10 },
  },
  {
    family: 'Claude Sonnet 4.6',
    pattern: /sonnet-4-6/,
    window: 1_000_000,
    maxOutput: 64_000,
    thinking: 'adaptive',
    cacheMin: 2_048,
    price: { input: 3, output: 15 },
  },
  {
    family: 'Claude Sonnet 4.5',
    pattern: /sonnet-4-5/,
    window: 200_000,
    maxOutput: 64_000,
    thinking: 'budget',
    cacheMin: 1_024,
    price: { input: 3, output: 15 },
  },
  {
    family: 'Claude Sonnet 3.7 to 4',
    pattern: /sonnet-4|3-7-sonnet/,
    window: 200_000,
    maxOutput: 64_000,
    thinking: 'budget',
    cacheMin: 1_024,
    price: { input: 3, output: 15 },
    regionalPremium: false,
  },
  {
    family: 'Claude Sonnet 3.5',
    pattern: /sonnet/,
    window: 200_000,
    maxOutput: 8_192,
    thinking: 'none',
    cacheMin: 1_024,
    price: { input: 3, output: 15 },
    regionalPremium: false,
  },
  {
    family: 'Claude Haiku 5.5',
    pattern: /haiku-5-5/,
    window: 1_000_000,
    maxOutput: 64_000,
    thinking: 'adaptive',
    cacheMin: 4_096,
    price: { input: 0.1, output: 0.5, long: { over: 100_000, input: 0.5, output: 2.5 } },
  },
  { family: 'Claude Haiku 4.5', pattern: /haiku-4/, window: 200_000, maxOutput: 64_000, thinking: 'budget', cacheMin: 4_096, price: { input: 1, output: 5 } },
  {
    family: 'Claude Haiku 3.5',
    pattern: /3-5-haiku|haiku-3-5/,
    window: 200_000,
    maxOutput: 8_192,
    thinking: 'none',
    cacheMin: 2_048,
    price: { input: 0.8, output: 4 },
    regionalPremium: false,
  },
  {
    family: 'Claude Haiku 3',
    pattern: /3-haiku|haiku-3/,
    window: 200_000,
    maxOutput: 4_096,
    thinking: 'none',
    cacheMin: 2_048,
    price: { input: 0.25, output: 1.25 },
    regionalPremium: false,
  },
];

const UNKNOWN: ModelInfo = {
  family: 'an unknown model',
  window: 200_000,
  maxOutput: 32_000,
  thinking: 'adaptive',
  // The smallest minimum: an unknown model's shared prefix is taken as cacheable.
  cacheMin: 1_024,
  price: { input: 15, output: 75 },
  regionalPremium: true,
};

/** The price a model the table does not know is held at: above every model it knows. */
export const HIGHEST_PRICE: Price = UNKNOWN.price;

/** What the table says of a model; `known` is false for a name it does not match. */
export function modelInfo(model: string): Readonly<ModelInfo & { known: boolean }> {
  let info = infoByModel.get(model);
  if (!info) {
    const row = MODEL_TABLE.find((r) => r.pattern.test(model));
    info = Object.freeze(row ? { ...row, regionalPremium: row.regionalPremium ?? true, known: true } : { ...UNKNOWN, known: false });
    // A run names a handful of models; a hostile workflow cannot make this grow past its own size.
    infoByModel.set(model, info);
  }
  return info;
}

/** Every call asks (its price, its region's premium): the table is read once per model. */
const infoByModel = new Map<string, Readonly<ModelInfo & { known: boolean }>>();

/** The max_tokens a call asks for when the workflow sets none: room for thinking and the reply. */
export function defaultMaxTokens(model: string): number {
  const info = modelInfo(model);
  return info.thinking === 'none' ? Math.min(4_096, info.maxOutput) : Math.min(16_000, info.maxOutput);
}
