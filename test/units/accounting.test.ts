import { describe, expect, it } from 'vitest';
import { Accounting } from '../../src/engine/ceilings/accounting.js';
import { Reservations } from '../../src/engine/ceilings/reservation.js';
import { LimitReached } from '../../src/engine/ending.js';
import { CallAborted } from '../../src/provider/provider-errors.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/workflow/limits.js';

/** $1 per million tokens of any kind: a call's worst case is (input + max_tokens) / 1e6 dollars. */
const PRICE = { m: { input: 1, output: 1, cache_write: 1 } };
const usage = (input: number, output: number) => ({ input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
const signal = () => new AbortController().signal;

function accounting(limits: Partial<Limits>, onUnknown?: (model: string) => void) {
  return new Accounting(() => ({ ...DEFAULT_LIMITS, ...limits }), { pricing: PRICE, onUnknownModel: onUnknown });
}

/** One run's reservations per accounting, as a run has. */
const reservations = new WeakMap<Accounting, Reservations>();

/** A call of model m held under the run's budget, as ModelCalls holds one; gives back the release. */
async function admit(a: Accounting, inputTokens: number, maxTokens: number, signal: AbortSignal): Promise<() => void> {
  const r = reservations.get(a) ?? reservations.set(a, new Reservations()).get(a)!;
  const settle = await r.reserve([a.ceiling], a.worstOf('m', inputTokens, maxTokens), signal);
  return () => void settle(0);
}

describe('budget reservation', () => {
  it('admits a call whose worst case fits exactly, and refuses one a token over when none is in flight', async () => {
    const a = accounting({ budgetUsd: 1 });
    const release = await admit(a, 400_000, 600_000, signal());
    release();
    await expect(admit(a, 400_001, 600_000, signal())).rejects.toThrow(LimitReached);
    await expect(admit(a, 400_001, 600_000, signal())).rejects.toThrow(
      'limit reached: budget_usd (spent $0.00 of $1.00; the next call could cost up to $1.00)',
    );
  });

  it('counts what was spent: a call that fits alone is refused after spending', async () => {
    const a = accounting({ budgetUsd: 1 });
    const release = await admit(a, 100, 100, signal());
    a.record('x', 'm', usage(500_000, 0), true);
    release();
    await expect(admit(a, 300_000, 300_000, signal())).rejects.toThrow(LimitReached);
    expect(a.total.costUsd).toBeCloseTo(0.5, 9);
  });

  it('a call that does not fit beside the ones in flight waits, and is admitted when one gives its reservation back', async () => {
    const a = accounting({ budgetUsd: 1 });
    const first = await admit(a, 300_000, 300_000, signal());
    let admitted = false;
    const second = admit(a, 300_000, 300_000, signal()).then((r) => ((admitted = true), r));
    await new Promise((r) => setTimeout(r, 5));
    expect(admitted).toBe(false);
    a.record('x', 'm', usage(100_000, 0), true);
    first();
    (await second)();
    expect(admitted).toBe(true);
  });

  it('a waiting call that can never fit is refused once the calls in flight end', async () => {
    const a = accounting({ budgetUsd: 1 });
    const first = await admit(a, 300_000, 300_000, signal());
    const second = admit(a, 300_000, 300_000, signal());
    a.record('x', 'm', usage(600_000, 0), true);
    first();
    await expect(second).rejects.toThrow(LimitReached);
  });

  it('a released reservation is given back once only', async () => {
    const a = accounting({ budgetUsd: 1 });
    const first = await admit(a, 250_000, 250_000, signal());
    const second = await admit(a, 250_000, 250_000, signal());
    first();
    first();
    // Had the first been given back twice, a third call of 0.75 would fit beside the second.
    const third = admit(a, 375_000, 375_000, signal());
    let settled = false;
    void third.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 5));
    expect(settled).toBe(false);
    second();
    (await third)();
  });

  it('an aborted wait is refused as aborted, and an aborted signal is refused at once', async () => {
    const a = accounting({ budgetUsd: 1 });
    const first = await admit(a, 300_000, 300_000, signal());
    const controller = new AbortController();
    const waiting = admit(a, 300_000, 300_000, controller.signal);
    controller.abort();
    await expect(waiting).rejects.toThrow(CallAborted);
    first();
    await expect(admit(a, 1, 1, controller.signal)).rejects.toThrow(CallAborted);
    // The aborted waiter is gone: a call that fits is admitted at once.
    (await admit(a, 300_000, 300_000, signal()))();
  });

  it('holds max_tokens_total too, and says which limit stopped the call', async () => {
    const a = accounting({ budgetUsd: 100, maxTokensTotal: 1_000 });
    (await admit(a, 400, 600, signal()))();
    a.record('x', 'm', usage(300, 100), true);
    const refused = admit(a, 300, 301, signal());
    await expect(refused).rejects.toThrow('limit reached: max_tokens_total (400 of 1000 tokens used; the next call could use up to 601)');
  });
});

describe('spend', () => {
  it("a call given up after its request left counts its prompt as the agent's and the run's, paid only when live", () => {
    const a = accounting({});
    a.recordAbandoned('lead', 1_000, 0.25, true);
    a.recordAbandoned('lead', 500, 0.5, false);
    expect(a.of('lead')).toEqual({ calls: 2, usage: usage(1_500, 0), costUsd: 0.75 });
    expect(a.total).toEqual({ calls: 2, usage: usage(1_500, 0), costUsd: 0.75 });
    expect(a.paidUsd).toBe(0.25);
  });

  it('a call that would reach the budget exactly but pass the token limit is refused for the tokens', async () => {
    const a = accounting({ budgetUsd: 1, maxTokensTotal: 999_999 });
    await expect(admit(a, 400_000, 600_000, signal())).rejects.toThrow(/^limit reached: max_tokens_total /);
  });

  it('is counted per agent and for the run; only live calls are paid now', () => {
    const a = accounting({});
    a.record('lead', 'm', usage(1_000_000, 0), true);
    a.record('lead', 'm', usage(0, 2_000_000), false);
    a.record('helper', 'm', usage(500_000, 500_000), true);
    expect(a.of('lead')).toEqual({ calls: 2, usage: usage(1_000_000, 2_000_000), costUsd: 3 });
    expect(a.of('helper').costUsd).toBeCloseTo(1, 9);
    expect(a.of('nobody')).toEqual({ calls: 0, usage: usage(0, 0), costUsd: 0 });
    expect(a.total.calls).toBe(3);
    expect(a.total.costUsd).toBeCloseTo(4, 9);
    expect(a.paidUsd).toBeCloseTo(2, 9);
  });

  it('answers from the cache count their tokens apart, at no cost', () => {
    const a = accounting({});
    a.recordCached(usage(10, 5));
    a.recordCached(usage(1, 1));
    expect(a.cached).toEqual({ calls: 2, tokens: 17 });
    expect(a.total.costUsd).toBe(0);
  });

  it('prices a call as sent one by one unless told it was batched (half), and notes what the batch price and the prompt cache saved', () => {
    const a = accounting({});
    expect(a.batched).toEqual({ calls: 0, saved_usd: 0 });
    expect(a.totals.promptCache).toEqual({ read_tokens: 0, written_tokens: 0, saved_usd: 0 });
    expect(a.priceOf('m')).toEqual(a.priceOf('m', 'anthropic', false));
    expect(a.priceOf('m', 'anthropic', true).input).toBe(a.priceOf('m').input / 2);
    a.record('lead', 'm', usage(1_000_000, 1_000_000), true, 'anthropic', true);
    a.record('lead', 'm', usage(2_000_000, 0), true, 'anthropic', true);
    a.record('lead', 'm', usage(1_000_000, 0), true);
    expect(a.batched.calls).toBe(2);
    expect(a.batched.saved_usd).toBeCloseTo(2, 9);
    expect(a.of('lead').costUsd).toBeCloseTo(3, 9);
    a.record('lead', 'm', { ...usage(0, 0), cache_read_input_tokens: 1_000_000, cache_creation_input_tokens: 500_000 }, true);
    a.record('lead', 'm', { ...usage(0, 0), cache_read_input_tokens: 1_000_000, cache_creation_input_tokens: 0 }, true);
    expect(a.totals.promptCache.read_tokens).toBe(2_000_000);
    expect(a.totals.promptCache.written_tokens).toBe(500_000);
    // $1 a million written, a tenth of that read: 2M read saved $1.80 against no cache; 0.5M written cost $0.125 more (at 1.25 ×).
    expect(a.totals.promptCache.saved_usd).toBeGreaterThan(0);
  });

  it("a request's worst case: its model's, or a named fallback's when dearer, six times over in fast mode", () => {
    const a = new Accounting(() => DEFAULT_LIMITS, {
      pricing: { cheap: { input: 1, output: 1 }, dear: { input: 10, output: 10 }, middle: { input: 5, output: 5 } },
    });
    const request = { model: 'cheap', max_tokens: 1_000, messages: [] };
    const cheap = a.worstOf('cheap', 1_000, 1_000).usd;
    expect(cheap).toBeGreaterThan(0);
    expect(a.worstOfCall(request, 1_000)).toEqual(a.worstOf('cheap', 1_000, 1_000));
    const withFallbacks = { ...request, fallbacks: [{ model: 'dear' }, { model: 'middle' }] };
    expect(a.worstOfCall(withFallbacks, 1_000).usd).toBeCloseTo(10 * cheap, 9);
    expect(a.worstOfCall({ ...request, model: 'dear', fallbacks: [{ model: 'cheap' }] }, 1_000).usd).toBeCloseTo(10 * cheap, 9);
    expect(a.worstOfCall({ ...request, fallbacks: [{ model: 'middle' }] }, 1_000).usd).toBeCloseTo(5 * cheap, 9);
    expect(a.worstOfCall({ ...withFallbacks, speed: 'fast' }, 1_000).usd).toBeCloseTo(60 * cheap, 9);
    expect(a.worstOfCall({ ...request, speed: 'standard' }, 1_000).usd).toBeCloseTo(cheap, 9);
    // Batched: half of each.
    expect(a.worstOfCall(withFallbacks, 1_000, 'anthropic', true).usd).toBeCloseTo(5 * cheap, 9);
    expect(a.worstOfCall(withFallbacks, 1_000).tokens).toBe(2_000);
    // fallbacks: default: the API's choice unknown, the call is held as one of a model the table does not know.
    const unknown = new Accounting(() => DEFAULT_LIMITS).worstOf('a-model-no-table-knows', 1_000, 1_000).usd;
    expect(unknown).toBeGreaterThan(10 * cheap);
    expect(a.worstOfCall({ ...request, fallbacks: 'default' }, 1_000).usd).toBeCloseTo(unknown, 9);
    expect(a.worstOfCall({ ...request, fallbacks: 'default' }, 1_000, 'anthropic', true).usd).toBeCloseTo(unknown / 2, 9);
    expect(a.worstOfCall({ ...request, fallbacks: 'default', speed: 'fast' }, 1_000).usd).toBeCloseTo(unknown * 6, 9);
  });

  it('warns once per model the price table does not know', () => {
    const told: string[] = [];
    const a = accounting({}, (model) => told.push(model));
    a.priceOf('m');
    a.priceOf('claude-unknown-9');
    a.priceOf('claude-unknown-9');
    expect(told).toEqual(['claude-unknown-9']);
  });
});
