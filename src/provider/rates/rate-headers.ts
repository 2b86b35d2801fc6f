/** The three limits the Messages API keeps per model class, as the `anthropic-ratelimit-*` headers name them. */
export const RATE_DIMENSIONS = ['requests', 'input_tokens', 'output_tokens'] as const;
export type RateDimension = (typeof RATE_DIMENSIONS)[number];

/** What a response said of one limit: its size, what was left, and when it is full again (ms since the epoch). */
export interface RateReading {
  limit: number;
  remaining: number;
  resetAt: number;
}

export type RateReadings = Partial<Record<RateDimension, RateReading>>;

/**
 * The limits a response reports (docs/organisation.md: pacing). A header that is missing or
 * not a number is left out: a proxy or another cloud may send none of them.
 */
export function rateReadings(headers: Headers, now = Date.now()): RateReadings {
  const readings: RateReadings = {};
  for (const dimension of RATE_DIMENSIONS) {
    const name = `anthropic-ratelimit-${dimension.replace('_', '-')}`;
    const limit = Number(headers.get(`${name}-limit`) ?? NaN);
    const remaining = Number(headers.get(`${name}-remaining`) ?? NaN);
    const resetAt = Date.parse(headers.get(`${name}-reset`) ?? '');
    if (!(limit > 0) || !(remaining >= 0)) continue;
    readings[dimension] = { limit, remaining: Math.min(remaining, limit), resetAt: Number.isFinite(resetAt) ? resetAt : now };
  }
  return readings;
}

/** How long a refusal asks to wait (`retry-after-ms`, else `retry-after` in seconds), or undefined. */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? NaN);
  if (ms >= 0) return ms;
  const seconds = Number(headers.get('retry-after') ?? NaN);
  return seconds >= 0 ? seconds * 1000 : undefined;
}
