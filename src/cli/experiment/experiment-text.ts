import type { ExperimentFile } from './experiment-file.js';
import type { CaseFigures, ExperimentResult, Guardrail } from './experiment-verdict.js';

/**
 * An experiment's result as a person reads it in ten seconds (docs/experiments.md: the verdict):
 * the verdict and why, the effect and its interval, the guardrails, the worst cases, what was
 * spent; and as JSON, the same figures.
 */

const WORST_SHOWN = 5;

/** How many cases, in words. */
export const cases = (n: number) => `${n} case${n === 1 ? '' : 's'}`;

/** The experiment's size and spending on one line. */
export function sizeLine(experiment: ExperimentFile, result: ExperimentResult): string {
  const { repeat, stages } = experiment.design;
  const size = `${cases(result.cases.length)} × ${repeat} runs per version per stage · stage ${result.stage} of ${stages}`;
  return `${size} · ${result.runs} runs · spent $${result.spent_usd.toFixed(4)}`;
}

/** The effect's interval, in points, with its level. */
export function intervalText(p: NonNullable<ExperimentResult['primary']>): string {
  return `${Math.round(p.level * 100)} % interval [${points(p.interval[0])}, ${points(p.interval[1])}]`;
}

const pct = (share: number | null) => (share === null ? '—' : `${(share * 100).toFixed(1)} %`);
export const points = (share: number) => `${share > 0 ? '+' : share < 0 ? '−' : ''}${Math.abs(share * 100).toFixed(1)}`;
const usd = (n: number | null) => (n === null ? '—' : `$${n.toFixed(4)}`);

export function versionLine(experiment: ExperimentFile): string {
  const named = (v: ExperimentFile['base']) => (v.commit === null ? v.ref : v.commit === v.ref ? v.commit.slice(0, 7) : `${v.ref} (${v.commit.slice(0, 7)})`);
  return `base ${named(experiment.base)} · head ${named(experiment.head)}`;
}

export function experimentText(experiment: ExperimentFile, result: ExperimentResult, dir: string): string {
  const lines = [`conclave experiment ${experiment.id}: ${result.verdict} (${result.reason})`, versionLine(experiment)];
  if (result.verdict === 'NO-CHANGE') {
    lines.push('no request of any case differs between the versions: nothing was run, nothing was spent');
    return `${lines.join('\n')}\n`;
  }
  const p = result.primary!;
  lines.push(
    `${sizeLine(experiment, result)}${experiment.batch ? ' (batched)' : ''}`,
    '',
    `${p.grader === 'pass' ? 'pass rate' : `${p.grader} held`}   base ${pct(p.base)}   head ${pct(p.head)}   ` +
      `effect ${points(p.effect)} points, ${intervalText(p)}, p = ${p.p}`,
    'guardrails',
    ...result.guardrails.map(guardrailLine),
  );
  const worst = worstCases(result.cases);
  if (worst.length > 0) {
    lines.push('worst cases');
    const width = Math.max(...worst.map((c) => c.name.length));
    for (const c of worst) lines.push(`  ${c.name.padEnd(width)}  base ${c.base.passes}/${c.base.runs}  head ${c.head.passes}/${c.head.runs}`);
  }
  if (result.says_nothing.length > 0)
    lines.push(`say nothing: ${cases(result.says_nothing.length)} passed or failed every run in both versions: ${result.says_nothing.join(', ')}`);
  for (const w of result.warnings) lines.push(`warning: ${w}`);
  lines.push('', `sessions in ${dir}/runs; the same verdict from them alone: conclave experiment --recompute ${dir}`);
  return `${lines.join('\n')}\n`;
}

const GUARDRAIL_NAMES: Record<Guardrail['id'], string> = {
  cost_per_run: 'cost per run',
  refusals: 'runs with a refusal',
  failures: 'runs that broke',
  duplicate_findings: 'duplicate findings',
};

function guardrailLine(g: Guardrail): string {
  const money = g.id === 'cost_per_run';
  const show = (n: number | null) => (money ? usd(n) : g.id === 'duplicate_findings' ? (n === null ? '—' : n.toFixed(2)) : pct(n));
  const limit = g.limit === null ? '' : `  (at most ${show(g.limit)})`;
  return `  ${GUARDRAIL_NAMES[g.id].padEnd(20)} ${show(g.base)} → ${show(g.head)}${limit}  ${g.held ? 'held' : 'FAILED'}`;
}

/** The cases where the head did worst against the base, those that moved first. */
export function worstCases(cases: readonly CaseFigures[]): CaseFigures[] {
  const change = (c: CaseFigures) => (c.head.runs && c.base.runs ? c.head.passes / c.head.runs - c.base.passes / c.base.runs : 0);
  return cases
    .filter((c) => change(c) < 0)
    .sort((a, b) => change(a) - change(b))
    .slice(0, WORST_SHOWN);
}

/** `--json`: the verdict's figures, and where they came from. */
export function experimentJson(experiment: ExperimentFile, result: ExperimentResult, dir: string): unknown {
  return {
    id: experiment.id,
    ...result,
    base: experiment.base,
    head: experiment.head,
    changes: experiment.changes,
    estimate: experiment.estimate,
    dir,
  };
}
