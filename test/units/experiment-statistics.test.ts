import { describe, expect, it } from 'vitest';
import { bootstrapInterval, DEFAULT_DESIGN, decideStage, effectOf, seeded, type Stratum, stratifiedTest } from '../../src/cli/experiment/statistics.js';

/**
 * The statistics of `conclave experiment` (docs/experiments.md: the statistics), alone and seeded:
 * the exact stratified test against hand-computed values, the interval, and each stage's verdict.
 * The whole design simulated: experiment-simulation.test.ts.
 */

const s = (basePasses: number, baseRuns: number, headPasses: number, headRuns: number): Stratum => ({
  base: { passes: basePasses, runs: baseRuns },
  head: { passes: headPasses, runs: headRuns },
});

describe('the exact stratified test', () => {
  it("one stratum is Fisher's exact test: 5/5 against 0/5 is 1/252 each way round", () => {
    const worse = stratifiedTest([s(5, 5, 0, 5)]);
    expect(worse.worse).toBeCloseTo(1 / 252, 10);
    expect(worse.better).toBeCloseTo(1, 10);
    const better = stratifiedTest([s(0, 5, 5, 5)]);
    expect(better.better).toBeCloseTo(1 / 252, 10);
  });

  it('strata multiply: four of 2/2 against 0/2 give (1/6)^4; a stratum that always passed adds nothing', () => {
    const four = [s(2, 2, 0, 2), s(2, 2, 0, 2), s(2, 2, 0, 2), s(2, 2, 0, 2)];
    expect(stratifiedTest(four).worse).toBeCloseTo((1 / 6) ** 4, 12);
    expect(stratifiedTest([...four, s(2, 2, 2, 2), s(0, 3, 0, 3)]).worse).toBeCloseTo((1 / 6) ** 4, 12);
  });

  it('a middle outcome: 3/5 against 1/5 (one-sided, hand-computed hypergeometric)', () => {
    // Four passes of ten, five of them the head's: P(head ≤ 1) = (C(4,0)C(6,5) + C(4,1)C(6,4)) / C(10,5) = (6 + 60) / 252.
    expect(stratifiedTest([s(3, 5, 1, 5)]).worse).toBeCloseTo(66 / 252, 12);
    expect(stratifiedTest([s(3, 5, 1, 5)]).better).toBeCloseTo(1 - 6 / 252, 12);
  });

  it("the effect is the mean of the inputs' differences; a stratum with no runs of a version is left out", () => {
    expect(effectOf([s(4, 5, 2, 5), s(1, 2, 2, 2), s(0, 0, 3, 3)])).toBeCloseTo((-0.4 + 0.5) / 2, 12);
  });

  it('the bootstrap is the same for the same seed, holds the effect, and narrows with its level', () => {
    const strata = [s(4, 5, 2, 5), s(1, 2, 2, 2), s(3, 5, 3, 5), s(5, 5, 1, 5), s(2, 5, 0, 5), s(5, 5, 5, 5)];
    const a = bootstrapInterval(strata, 'x', 0.95);
    expect(bootstrapInterval(strata, 'x', 0.95)).toEqual(a);
    expect(a[0]).toBeLessThan(effectOf(strata));
    expect(a[1]).toBeGreaterThan(effectOf(strata));
    const narrow = bootstrapInterval(strata, 'x', 0.5);
    expect(narrow[1] - narrow[0]).toBeLessThan(a[1] - a[0]);
  });
});

describe('the verdict of a stage', () => {
  it('REJECT needs the test and the minimum effect; a small significant drop claims nothing; a sure improvement is PROMOTE', () => {
    const many = (b: number, h: number) => Array.from({ length: 20 }, () => s(b, 100, h, 100));
    expect(decideStage(many(90, 50), 1, DEFAULT_DESIGN, 'a')).toMatchObject({ verdict: 'REJECT', reason: 'candidate_regressed' });
    expect(decideStage(many(90, 85), 1, DEFAULT_DESIGN, 'a')).toMatchObject({ verdict: 'INCONCLUSIVE', reason: 'effect_below_threshold' });
    expect(decideStage(many(50, 90), 1, DEFAULT_DESIGN, 'a')).toMatchObject({ verdict: 'PROMOTE', reason: 'candidate_improved' });
    expect(decideStage(many(70, 70), 1, DEFAULT_DESIGN, 'a')).toMatchObject({ verdict: 'PROMOTE', reason: 'no_regression' });
  });

  it('unclear after the first stage: no verdict, so that a second runs; INCONCLUSIVE after the last', () => {
    const few = [s(3, 5, 2, 5), s(2, 5, 3, 5), s(4, 5, 2, 5), s(1, 5, 2, 5)];
    expect(decideStage(few, 1, DEFAULT_DESIGN, 'a').verdict).toBeUndefined();
    expect(decideStage(few, 2, DEFAULT_DESIGN, 'a')).toMatchObject({ verdict: 'INCONCLUSIVE', reason: 'evidence_insufficient' });
  });

  it('the first stage spends a quarter of alpha: p = 0.004 rejects at the second stage only', () => {
    // Five inputs of 2/2 against 0/2 and one of 1/2 against 1/2: (1/6)^3 = 0.0046 is below 0.0075, above 0.0025.
    const strata = [s(2, 2, 0, 2), s(2, 2, 0, 2), s(2, 2, 0, 2)];
    expect(stratifiedTest(strata).worse).toBeCloseTo(1 / 216, 12);
    expect(decideStage(strata, 1, DEFAULT_DESIGN, 'a').verdict).toBeUndefined();
    expect(decideStage(strata, 2, DEFAULT_DESIGN, 'a')).toMatchObject({ verdict: 'REJECT' });
  });
});
