import { createHash } from 'node:crypto';

/**
 * The statistics of an experiment (docs/experiments.md: the statistics): pure and seeded, so that
 * `--recompute` gives the same figures byte for byte. The input is the unit: each case is a
 * stratum holding the base's and the head's passes out of their runs.
 */

export interface Tally {
  passes: number;
  runs: number;
}

export interface Stratum {
  base: Tally;
  head: Tally;
}

/** A generator of numbers in [0, 1) from a text (mulberry32 on the text's SHA-256). */
export function seeded(seed: string): () => number {
  let state = createHash('sha256').update(seed).digest().readUInt32LE(0);
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const logFactorials: number[] = [0];
function logFactorial(n: number): number {
  for (let i = logFactorials.length; i <= n; i++) logFactorials.push(logFactorials[i - 1]! + Math.log(i));
  return logFactorials[n]!;
}
const logChoose = (n: number, k: number) => logFactorial(n) - logFactorial(k) - logFactorial(n - k);

/**
 * The head's passes in one stratum when the two versions do equally well, given what the stratum
 * holds (its passes in all, the head's runs): hypergeometric, as an array from `low`.
 */
function headPasses(s: Stratum): { low: number; p: number[] } {
  const all = s.base.runs + s.head.runs;
  const passes = s.base.passes + s.head.passes;
  const low = Math.max(0, s.head.runs - (all - passes));
  const high = Math.min(s.head.runs, passes);
  const p: number[] = [];
  for (let k = low; k <= high; k++) p.push(Math.exp(logChoose(passes, k) + logChoose(all - passes, s.head.runs - k) - logChoose(all, s.head.runs)));
  return { low, p };
}

export interface StratifiedTest {
  /** One-sided p that the head is worse: the chance of as few head passes or fewer, were the versions equal. */
  worse: number;
  /** One-sided p that the head is better. */
  better: number;
}

/**
 * The exact stratified test of two versions' pass rates (the exact form of Cochran–Mantel–Haenszel's
 * test): the head's passes summed over the strata, against their distribution when the versions are
 * equal, each stratum's margins held (a convolution of hypergeometric distributions). A stratum
 * where every run passed or every run failed adds nothing.
 */
export function stratifiedTest(strata: readonly Stratum[]): StratifiedTest {
  let low = 0;
  let dist = [1];
  let observed = 0;
  for (const s of strata) {
    if (s.base.runs === 0 || s.head.runs === 0) continue;
    observed += s.head.passes;
    const one = headPasses(s);
    const next = new Array<number>(dist.length + one.p.length - 1).fill(0);
    for (let i = 0; i < dist.length; i++) for (let j = 0; j < one.p.length; j++) next[i + j]! += dist[i]! * one.p[j]!;
    dist = next;
    low += one.low;
  }
  const at = observed - low;
  const sum = (from: number, to: number) => dist.slice(from, to + 1).reduce((a, b) => a + b, 0);
  return { worse: Math.min(1, sum(0, at)), better: Math.min(1, sum(at, dist.length - 1)) };
}

const rate = (t: Tally) => t.passes / t.runs;
const counted = (strata: readonly Stratum[]) => strata.filter((s) => s.base.runs > 0 && s.head.runs > 0);

/** The effect: the head's pass rate less the base's, input by input, averaged over the inputs (negative: the head is worse). */
export function effectOf(strata: readonly Stratum[]): number {
  const both = counted(strata);
  if (both.length === 0) return 0;
  return both.reduce((a, s) => a + rate(s.head) - rate(s.base), 0) / both.length;
}

export const BOOTSTRAP_RESAMPLES = 1_000;

/**
 * The effect's percentile interval (two-sided, `level`), drawn from `seed`: the inputs resampled
 * with replacement, and each resampled input's two pass rates drawn from what its runs say of them
 * (Jeffreys' Beta(passes + ½, failures + ½)), so that a few runs that all passed do not pass for
 * certainty: 2 of 2 in both versions says little, 10 of 10 more.
 */
export function bootstrapInterval(strata: readonly Stratum[], seed: string, level: number): [number, number] {
  const both = counted(strata);
  if (both.length === 0) return [0, 0];
  const random = seeded(seed);
  const drawn = (t: Tally) => beta(random, t.passes + 0.5, t.runs - t.passes + 0.5);
  const means: number[] = [];
  for (let r = 0; r < BOOTSTRAP_RESAMPLES; r++) {
    let sum = 0;
    for (let i = 0; i < both.length; i++) {
      const s = both[Math.floor(random() * both.length)]!;
      sum += drawn(s.head) - drawn(s.base);
    }
    means.push(sum / both.length);
  }
  means.sort((a, b) => a - b);
  const tail = (1 - level) / 2;
  const at = (q: number) => means[Math.min(means.length - 1, Math.max(0, Math.round(q * (means.length - 1))))]!;
  return [at(tail), at(1 - tail)];
}

/** A Beta(a, b) draw, as the ratio of two Gamma draws. */
function beta(random: () => number, a: number, b: number): number {
  const x = gamma(random, a);
  return x / (x + gamma(random, b));
}

/** A Gamma(shape, 1) draw (Marsaglia and Tsang; below shape 1 by the boost of a draw at shape + 1). */
function gamma(random: () => number, shape: number): number {
  if (shape < 1) return gamma(random, shape + 1) * (1 - random()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const z = normal(random);
    const v = (1 + c * z) ** 3;
    if (v <= 0) continue;
    const u = 1 - random();
    if (Math.log(u) < 0.5 * z * z + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** A standard normal draw (Box and Muller). */
function normal(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/** How an experiment decides (docs/experiments.md: the statistics). */
export interface Design {
  /** The smallest change in pass rate worth a claim, from 0 to 1 (default 0.10: ten points). */
  minEffect: number;
  /** The chance of a REJECT or an improvement claimed when nothing changed, one-sided, split equally between the stages. */
  alpha: number;
  /** The interval's level, split between the stages likewise; a PROMOTE for a change no worse than the minimum effect rests on it. */
  level: number;
  stages: 1 | 2;
}

export const DEFAULT_DESIGN: Design = { minEffect: 0.1, alpha: 0.01, level: 0.9, stages: 2 };

export type Verdict = 'PROMOTE' | 'REJECT' | 'INCONCLUSIVE' | 'NO-CHANGE';
export type Reason =
  | 'no_change'
  | 'candidate_improved'
  | 'no_regression'
  | 'candidate_regressed'
  | 'guardrail_failed'
  | 'effect_below_threshold'
  | 'evidence_insufficient';

export interface PrimaryFigures {
  effect: number;
  interval: [number, number];
  /** The interval's level at this stage. */
  level: number;
  /** The one-sided p in the direction of the effect. */
  p: number;
  test: StratifiedTest;
}

export interface StageDecision {
  /** undefined: unclear after this stage, and another may run. */
  verdict?: Verdict;
  reason?: Reason;
  figures: PrimaryFigures;
}

/**
 * What the primary measure says after stage `stage` (from 1) of `design.stages`: REJECT when the
 * head is worse by the test at this stage's share of alpha and by at least the minimum effect;
 * PROMOTE when it is better so, or when the interval rules out a drop as large as the minimum
 * effect; a significant change smaller than the minimum effect claims nothing; otherwise unclear,
 * and INCONCLUSIVE once the last stage has run.
 */
export function decideStage(strata: readonly Stratum[], stage: number, design: Design, seed: string): StageDecision {
  // The first stage spends a quarter of alpha and the second the rest, where the evidence is twice as large (docs/experiments.md).
  const alpha = design.stages === 1 ? design.alpha : design.alpha * (stage === 1 ? 0.25 : 0.75);
  const level = 1 - (1 - design.level) / design.stages;
  const test = stratifiedTest(strata);
  const effect = effectOf(strata);
  const interval = bootstrapInterval(strata, `${seed}/stage-${stage}`, level);
  const figures: PrimaryFigures = { effect, interval, level, p: effect < 0 ? test.worse : test.better, test };
  const last = stage >= design.stages;
  if (test.worse <= alpha) return effect <= -design.minEffect ? decided('REJECT', 'candidate_regressed') : decided('INCONCLUSIVE', 'effect_below_threshold');
  if (test.better <= alpha && effect >= design.minEffect) return decided('PROMOTE', 'candidate_improved');
  if (interval[0] > -design.minEffect) return decided('PROMOTE', 'no_regression');
  return last ? decided('INCONCLUSIVE', 'evidence_insufficient') : { figures };

  function decided(verdict: Verdict, reason: Reason): StageDecision {
    return { verdict, reason, figures };
  }
}
