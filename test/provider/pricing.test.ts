import { describe, expect, it } from 'vitest';
import { costOf, priceOf } from '../../src/provider/pricing.js';

const usage = (input: number, output: number, write = 0, read = 0) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: write,
  cache_read_input_tokens: read,
});

describe('pricing', () => {
  it.each([
    ['claude-sonnet-5-5', 2, 10],
    ['claude-sonnet-4-5-20250929', 3, 15],
    ['claude-opus-5-5', 4, 20],
    ['claude-opus-4-8', 5, 25],
    ['claude-opus-4-1', 15, 75],
    ['claude-fable-5-2', 10, 50],
    ['claude-haiku-4-5', 1, 5],
    ['claude-3-5-haiku-20241022', 0.8, 4],
  ])('%s costs $%d / $%d per million tokens', (model, input, output) => {
    const { price, known } = priceOf(model);
    expect(known).toBe(true);
    expect(costOf(usage(1_000_000, 1_000_000), price)).toBeCloseTo(input + output, 9);
  });

  it('prices cache writes at 1.25× and reads at 0.1× the input price', () => {
    expect(costOf(usage(0, 0, 1_000_000, 1_000_000), priceOf('claude-sonnet-5-5').price)).toBeCloseTo(2.5 + 0.2, 9);
  });

  it('prices Haiku 5.5 by prompt length', () => {
    const { price } = priceOf('claude-haiku-5-5');
    expect(costOf(usage(100_000, 1_000_000), price)).toBeCloseTo(0.01 + 0.5, 9);
    expect(costOf(usage(60_000, 1_000_000, 0, 60_000), price)).toBeCloseTo(0.03 + 2.5 + (60_000 * 0.05) / 1e6, 9);
  });

  it('prices an unknown model as the most expensive family, and says so', () => {
    expect(priceOf('claude-mythos-5-2')).toEqual({ price: { input: 15, output: 75 }, known: false, given: false });
  });

  it("lets the workflow's pricing win, by the longest matching prefix", () => {
    const overrides = { 'claude-mythos': { input: 20, output: 100 }, 'claude-mythos-5-2': { input: 25, output: 125 } };
    expect(priceOf('claude-mythos-5-2', overrides).price.input).toBe(25);
    expect(priceOf('claude-mythos-5-1', overrides).price.input).toBe(20);
  });
});

describe('formatUsd', () => {
  it('shows cents from a dollar up and three significant digits below, never "$0.00" for a budget under a cent', async () => {
    const { formatUsd } = await import('../../src/provider/money.js');
    expect([2, 1.2345, 0.5, 0.05, 0.0499, 0.005, 0.000123, 0].map(formatUsd)).toEqual([
      '$2.00',
      '$1.23',
      '$0.50',
      '$0.05',
      '$0.0499',
      '$0.005',
      '$0.000123',
      '$0.00',
    ]);
  });
});
