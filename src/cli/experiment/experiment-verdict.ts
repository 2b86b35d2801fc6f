import type { RunOutcome } from './run-outcome.js';
import { decideStage, type Design, type Reason, type Stratum, type Tally, type Verdict } from './statistics.js';

/**
 * An experiment's verdict from its runs' outcomes (docs/experiments.md: the verdict): pure, so that
 * the run that made the sessions and `--recompute` over them print the same, byte for byte.
 */

export type VersionName = 'base' | 'head';

/** A run the experiment makes: its case (an index into the cases), version, stage and repeat, and its session (relative to the experiment's folder). */
export interface PlannedRun {
  case: number;
  version: VersionName;
  stage: 1 | 2;
  repeat: number;
  session: string;
}

export interface ExperimentCase {
  /** The test file, relative to the repository's top. */
  file: string;
  name: string;
}

/** How far the head may be worse on what is not the primary measure (docs/experiments.md: guardrails). */
export interface GuardrailLimits {
  /** The mean cost of a run, as a share of the base's (0.2: at most 20 % more). */
  cost_per_run: number;
  /** The share of runs with a refusal, in points more than the base's. */
  refusals: number;
  /** The share of runs that broke (an error, an outage, a limit), in points more than the base's. */
  failures: number;
  /** The duplicate_findings grader's mean, more than the base's. */
  duplicate_findings: number;
}

export const DEFAULT_GUARDRAILS: GuardrailLimits = { cost_per_run: 0.2, refusals: 0.05, failures: 0.05, duplicate_findings: 0.1 };

export interface Guardrail {
  id: keyof GuardrailLimits;
  base: number | null;
  head: number | null;
  /** The most the head may be, from the base's. */
  limit: number | null;
  held: boolean;
}

export interface CaseFigures {
  file: string;
  name: string;
  base: Tally;
  head: Tally;
}

export interface ExperimentResult {
  verdict: Verdict;
  reason: Reason;
  /** The stage the verdict was reached at (0 for NO-CHANGE). */
  stage: number;
  primary: { grader: string; base: number | null; head: number | null; effect: number; interval: [number, number]; level: number; p: number } | null;
  guardrails: Guardrail[];
  cases: CaseFigures[];
  /** The cases whose runs all passed, or all failed, in both versions: they say nothing of the change. */
  says_nothing: string[];
  warnings: string[];
  runs: number;
  spent_usd: number;
}

/** The fewest inputs an experiment should have (DESIGN: at least 20). */
export const ENOUGH_CASES = 20;

export type OutcomeOf = (run: PlannedRun) => RunOutcome;

/**
 * The verdict after the runs made so far: stage 1 decides, or is unclear and stage 2's runs (when
 * there are any) decide; `undefined` when stage 1 is unclear and stage 2 has not run.
 */
export function verdictOf(
  cases: readonly ExperimentCase[],
  runs: readonly PlannedRun[],
  outcomeOf: OutcomeOf,
  passOf: (outcome: RunOutcome) => boolean,
  design: Design,
  limits: GuardrailLimits,
  seed: string,
  primary = 'pass',
): ExperimentResult | undefined {
  const outcomes = runs.map((run) => ({ run, outcome: outcomeOf(run) }));
  const strataUpTo = (stage: number) =>
    strataOf(
      cases,
      outcomes.filter((o) => o.run.stage <= stage).map((o) => ({ ...o, pass: passOf(o.outcome) })),
    );
  let stage = 1;
  let decision = decideStage(strataUpTo(1), 1, design, seed);
  if (decision.verdict === undefined) {
    if (!outcomes.some((o) => o.run.stage === 2)) return undefined;
    stage = 2;
    decision = decideStage(strataUpTo(2), 2, design, seed);
  }
  const strata = strataUpTo(stage);
  const used = outcomes.filter((o) => o.run.stage <= stage);
  const guardrails = guardrailsOf(used, limits);
  let verdict = decision.verdict!;
  let reason = decision.reason!;
  if (verdict !== 'REJECT' && guardrails.some((g) => !g.held)) [verdict, reason] = ['REJECT', 'guardrail_failed'];
  const figures = cases.map((c, i) => ({ ...c, base: strata[i]!.base, head: strata[i]!.head }));
  const rate = (version: VersionName) => {
    const all = strata.reduce((a, s) => ({ passes: a.passes + s[version].passes, runs: a.runs + s[version].runs }), { passes: 0, runs: 0 });
    return all.runs === 0 ? null : round(all.passes / all.runs);
  };
  return {
    verdict,
    reason,
    stage,
    primary: {
      grader: primary,
      base: rate('base'),
      head: rate('head'),
      effect: round(decision.figures.effect),
      interval: [round(decision.figures.interval[0]), round(decision.figures.interval[1])],
      level: decision.figures.level,
      p: Number(decision.figures.p.toPrecision(4)),
    },
    guardrails,
    cases: figures,
    says_nothing: figures.filter((c) => uniform(c.base, c.head)).map((c) => c.name),
    warnings:
      cases.length < ENOUGH_CASES
        ? [`${cases.length} case${cases.length === 1 ? '' : 's'}: an experiment says little with fewer than ${ENOUGH_CASES} inputs`]
        : [],
    runs: used.length,
    spent_usd: round(
      outcomes.reduce((a, o) => a + o.outcome.cost_usd, 0),
      6,
    ),
  };
}

/** The verdict of an edit that changes nothing a run sends: nothing ran. */
export function noChange(cases: readonly ExperimentCase[]): ExperimentResult {
  return {
    verdict: 'NO-CHANGE',
    reason: 'no_change',
    stage: 0,
    primary: null,
    guardrails: [],
    cases: cases.map((c) => ({ ...c, base: { passes: 0, runs: 0 }, head: { passes: 0, runs: 0 } })),
    says_nothing: [],
    warnings: [],
    runs: 0,
    spent_usd: 0,
  };
}

function strataOf(cases: readonly ExperimentCase[], outcomes: readonly { run: PlannedRun; pass: boolean }[]): Stratum[] {
  const strata: Stratum[] = cases.map(() => ({ base: { passes: 0, runs: 0 }, head: { passes: 0, runs: 0 } }));
  for (const { run, pass } of outcomes) {
    const tally = strata[run.case]?.[run.version];
    if (!tally) continue;
    tally.runs++;
    if (pass) tally.passes++;
  }
  return strata;
}

const uniform = (base: Tally, head: Tally) => {
  const all = base.passes + head.passes;
  return base.runs + head.runs > 0 && (all === 0 || all === base.runs + head.runs);
};

function guardrailsOf(outcomes: readonly { run: PlannedRun; outcome: RunOutcome }[], limits: GuardrailLimits): Guardrail[] {
  const of = (version: VersionName) => outcomes.filter((o) => o.run.version === version).map((o) => o.outcome);
  const [base, head] = [of('base'), of('head')];
  const mean = (values: (number | null)[]) => {
    const known = values.filter((v): v is number => v !== null);
    return known.length === 0 ? null : round(known.reduce((a, b) => a + b, 0) / known.length, 6);
  };
  const share = (runs: RunOutcome[], test: (o: RunOutcome) => boolean) => (runs.length === 0 ? null : round(runs.filter(test).length / runs.length));
  const rail = (id: keyof GuardrailLimits, b: number | null, h: number | null, limit: number | null): Guardrail => ({
    id,
    base: b,
    head: h,
    limit: limit === null ? null : round(limit, 6),
    held: b === null || h === null || limit === null || h <= limit + 1e-9,
  });
  const cost = [mean(base.map((o) => o.cost_usd)), mean(head.map((o) => o.cost_usd))] as const;
  const refusals = [share(base, (o) => o.refusals > 0), share(head, (o) => o.refusals > 0)] as const;
  const broke = [share(base, (o) => o.broke), share(head, (o) => o.broke)] as const;
  const duplicates = [mean(base.map((o) => o.duplicate_findings)), mean(head.map((o) => o.duplicate_findings))] as const;
  const plus = (b: number | null, by: number) => (b === null ? null : b + by);
  return [
    rail('cost_per_run', ...cost, cost[0] === null ? null : cost[0] * (1 + limits.cost_per_run)),
    rail('refusals', ...refusals, plus(refusals[0], limits.refusals)),
    rail('failures', ...broke, plus(broke[0], limits.failures)),
    rail('duplicate_findings', ...duplicates, plus(duplicates[0], limits.duplicate_findings)),
  ];
}

function round(n: number, places = 4): number {
  const f = 10 ** places;
  return Math.round(n * f) / f;
}
