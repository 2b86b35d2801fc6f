import { setMaxListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Accounting } from '../../src/engine/ceilings/accounting.js';
import { Reservations } from '../../src/engine/ceilings/reservation.js';
import { LimitReached } from '../../src/engine/ending.js';
import { inputTokensAtMost, type Price } from '../../src/provider/pricing.js';
import { DEFAULT_LIMITS } from '../../src/workflow/limits.js';

/** mulberry32: a small seeded generator, so that a failing case can be run again. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CASES = 500;
const SEED = Number(process.env.BUDGET_SEED ?? Date.now() % 1_000_000);

describe('the budget is a ceiling (property test)', () => {
  // The seed is in each assertion's message, not the name: mutation testing finds a test by its name.
  it(`reported spend never passes budget_usd: ${CASES} random teams, concurrency up to 64`, async () => {
    for (let n = 0; n < CASES; n++) {
      const seed = SEED + n;
      const rand = random(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
      const agents = int(1, 40);
      const concurrency = int(1, 64);
      const budgetUsd = 0.001 + rand() * 3;
      const price: Price = {
        input: rand() * 20,
        output: rand() * 80,
        ...(rand() < 0.5 ? { cache_write: rand() * 25, cache_read: rand() * 2 } : {}),
        ...(rand() < 0.3 ? { long: { over: int(1_000, 50_000), input: rand() * 30, output: rand() * 100 } } : {}),
      };
      const limits = { ...DEFAULT_LIMITS, budgetUsd, concurrency };
      const accounting = new Accounting(() => limits, { pricing: { model: price } });
      const reservations = new Reservations();
      // One signal for every call, as a run has (the run lifts the listener limit on it too).
      const signal = new AbortController().signal;
      setMaxListeners(0, signal);
      let inFlight = 0;
      let stops = 0;

      const agent = async (name: string) => {
        for (;;) {
          const bytes = int(200, 400_000);
          const maxTokens = int(1, 32_000);
          let settle: (costUsd: number) => Promise<void>;
          try {
            settle = await reservations.reserve([accounting.ceiling], accounting.worstOf('model', inputTokensAtMost(bytes), maxTokens), signal);
          } catch (e) {
            if (!(e instanceof LimitReached)) throw e;
            stops++;
            return;
          }
          inFlight++;
          await new Promise((r) => setTimeout(r, int(0, 2)));
          // What the API bills is at most what was reserved: the prompt within the estimate, output within max_tokens.
          const prompt = int(1, inputTokensAtMost(bytes));
          const written = int(0, prompt);
          const read = int(0, prompt - written);
          accounting.record(
            name,
            'model',
            { input_tokens: prompt - written - read, cache_creation_input_tokens: written, cache_read_input_tokens: read, output_tokens: int(0, maxTokens) },
            true,
          );
          inFlight--;
          await settle(0);
        }
      };
      // The scheduler runs at most `concurrency` turns at once.
      await Promise.all(Array.from({ length: Math.min(agents, concurrency) }, (_, i) => agent(`agent${i}`)));
      const spent = accounting.total.costUsd;
      expect(spent, `seed ${seed}: spent ${spent} of ${budgetUsd}`).toBeLessThanOrEqual(budgetUsd + 1e-12);
      expect(inFlight).toBe(0);
      expect(stops, `seed ${seed}`).toBe(Math.min(agents, concurrency));
    }
  }, 120_000);
});
