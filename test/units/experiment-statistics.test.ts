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

/** The first three draws for an experiment's id, as conclave has always drawn them (mulberry32 on the id's SHA-256). */
const FIXED_DRAWS = [0.667835195316, 0.521804046351, 0.681455043145];

describe('the pieces a recomputed verdict depends on', () => {
  it('the generator is fixed: the same text gives the same numbers, today and in every later conclave', () => {
    const random = seeded('experiment 20261129T035317Z-6ab416');
    const first = [random(), random(), random()].map((n) => Number(n.toFixed(12)));
    expect(first).toEqual(FIXED_DRAWS);
    for (const n of first) expect(n >= 0 && n < 1).toBe(true);
  });

  it("the interval of one input is its two Beta posteriors' difference: 8 of 10 against 2 of 10 spans about +21 to +87 points", () => {
    const [lo, hi] = bootstrapInterval([s(2, 10, 8, 10)], 'one', 0.95);
    // Beta(8.5, 2.5) − Beta(2.5, 8.5): mean 0.545, standard deviation 0.171.
    expect(lo).toBeGreaterThan(0.13);
    expect(lo).toBeLessThan(0.29);
    expect(hi).toBeGreaterThan(0.79);
    expect(hi).toBeLessThan(0.94);
  });

  it('no pass in two runs of each version: Beta(½, 2½) on both sides, centred on 0, about ±0.5 wide', () => {
    const [lo, hi] = bootstrapInterval([s(0, 2, 0, 2)], 'zero', 0.95);
    expect(lo).toBeGreaterThan(-0.75);
    expect(lo).toBeLessThan(-0.3);
    expect(hi).toBeGreaterThan(0.3);
    expect(hi).toBeLessThan(0.75);
    expect(Math.abs(lo + hi)).toBeLessThan(0.15);
  });

  it('a stratum that lacks a version adds nothing to the test, the effect or the interval; none at all: zero', () => {
    const some = [s(2, 2, 0, 2), s(2, 2, 0, 2)];
    expect(stratifiedTest([...some, s(3, 3, 0, 0), s(0, 0, 2, 2)])).toEqual(stratifiedTest(some));
    expect(effectOf([...some, s(3, 3, 0, 0)])).toBe(-1);
    expect(effectOf([s(3, 3, 0, 0)])).toBe(0);
    expect(bootstrapInterval([s(3, 3, 0, 0)], 'x', 0.95)).toEqual([0, 0]);
  });

  it("each stage's level and α: 95 % and a quarter of α at stage 1 of two; the design's own with one stage", () => {
    const strata = [s(2, 2, 0, 2), s(2, 2, 0, 2), s(2, 2, 0, 2)];
    expect(decideStage(strata, 1, DEFAULT_DESIGN, 'a').figures.level).toBeCloseTo(0.95, 12);
    const one = { ...DEFAULT_DESIGN, stages: 1 as const };
    expect(decideStage(strata, 1, one, 'a').figures.level).toBeCloseTo(0.9, 12);
    // p = 1/216 = 0.0046: under the whole α of a one-stage design.
    expect(decideStage(strata, 1, one, 'a')).toMatchObject({ verdict: 'REJECT', reason: 'candidate_regressed' });
  });

  it('p is taken in the direction of the effect; a sure gain smaller than the minimum effect is no claim of improvement', () => {
    const worse = decideStage([s(2, 2, 0, 2)], 1, DEFAULT_DESIGN, 'a');
    expect(worse.figures.p).toBeCloseTo(1 / 6, 12);
    const better = decideStage([s(0, 2, 2, 2)], 1, DEFAULT_DESIGN, 'a');
    expect(better.figures.p).toBeCloseTo(1 / 6, 12);
    const small = decideStage(
      Array.from({ length: 20 }, () => s(85, 100, 90, 100)),
      1,
      DEFAULT_DESIGN,
      'a',
    );
    expect(small.figures.test.better).toBeLessThan(0.0025);
    expect(small).toMatchObject({ verdict: 'PROMOTE', reason: 'no_regression' });
  });
});
