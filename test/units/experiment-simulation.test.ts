import { describe, expect, it } from 'vitest';
import { DEFAULT_DESIGN, decideStage, seeded, type StageDecision, type Stratum } from '../../src/cli/experiment/statistics.js';

/**
 * The two-stage design of `conclave experiment` simulated (docs/experiments.md: measured by
 * simulation), the statistics alone and seeded, as the issue asks: a uniform 20-point drop over 20
 * inputs REJECTed in at least 95 of 100 experiments, a change that does nothing in at most 1 of
 * 100. Left out of the mutation run (vitest.mutation.config.ts): a few seconds here, minutes under
 * Stryker's instrumentation; experiment-statistics.test.ts holds the same code by hand.
 */

const s = (basePasses: number, baseRuns: number, headPasses: number, headRuns: number): Stratum => ({
  base: { passes: basePasses, runs: baseRuns },
  head: { passes: headPasses, runs: headRuns },
});

/** One experiment: 20 inputs, each with its base rate, K = 5 runs per version per stage, two stages at most. */
function simulate(drop: number, seed: string): StageDecision {
  const random = seeded(seed);
  const rates = Array.from({ length: 20 }, () => 0.4 + 0.5 * random());
  const strata = rates.map(() => s(0, 0, 0, 0));
  let decision: StageDecision | undefined;
  for (const stage of [1, 2]) {
    rates.forEach((p, i) => {
      for (let k = 0; k < 5; k++) {
        strata[i]!.base.runs++;
        if (random() < p) strata[i]!.base.passes++;
        strata[i]!.head.runs++;
        if (random() < p - drop) strata[i]!.head.passes++;
      }
    });
    decision = decideStage(strata, stage, DEFAULT_DESIGN, `experiment ${seed}`);
    if (decision.verdict) break;
  }
  return decision!;
}

function verdicts(drop: number, experiments: number, seed: string): Record<string, number> {
  const counted: Record<string, number> = {};
  for (let e = 0; e < experiments; e++) {
    const d = simulate(drop, `${seed}-${e}`);
    counted[d.verdict!] = (counted[d.verdict!] ?? 0) + 1;
  }
  return counted;
}

describe('the design simulated (20 inputs, base rates from 40 to 90 %, K = 5, two stages)', { timeout: 120_000 }, () => {
  it('a uniform 20-point drop is REJECTed in at least 95 of 100 experiments', () => {
    const counted = verdicts(0.2, 100, 'drop');
    expect(counted.REJECT).toBeGreaterThanOrEqual(95);
  });

  it('a change that does nothing is REJECTed in at most 1 of 100', () => {
    const counted = verdicts(0, 100, 'noop');
    expect(counted.REJECT ?? 0).toBeLessThanOrEqual(1);
  });

  it('a 40-point drop is REJECTed every time, at the first stage', () => {
    for (let e = 0; e < 20; e++) expect(simulate(0.4, `forty-${e}`)).toMatchObject({ verdict: 'REJECT' });
  });
});
