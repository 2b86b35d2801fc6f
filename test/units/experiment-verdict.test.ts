import { describe, expect, it } from 'vitest';
import type { ExperimentFile } from '../../src/cli/experiment/experiment-file.js';
import { experimentMarkdown, experimentMarker } from '../../src/cli/experiment/experiment-markdown.js';
import { DEFAULT_GUARDRAILS, noChange, type PlannedRun, verdictOf } from '../../src/cli/experiment/experiment-verdict.js';
import { firstDifference } from '../../src/cli/experiment/request-changes.js';
import type { RunOutcome } from '../../src/cli/experiment/run-outcome.js';
import { DEFAULT_DESIGN } from '../../src/cli/experiment/statistics.js';

/**
 * An experiment's verdict from its runs' outcomes (docs/experiments.md: the verdict), the first
 * difference between two versions' requests, and the verdict as Markdown: pure parts, by hand.
 */

const outcome = (pass: boolean, over: Partial<RunOutcome> = {}): RunOutcome => ({
  pass,
  status: 'success',
  cost_usd: 0.01,
  refusals: 0,
  broke: false,
  duplicate_findings: null,
  failed: pass ? [] : ['outputs.verdict'],
  ...over,
});

/** `cases` cases, K runs per version in stage 1: each run's outcome from `of`. */
function experimentOf(cases: number, k: number, of: (c: number, version: 'base' | 'head', r: number) => RunOutcome) {
  const entries = Array.from({ length: cases }, (_, i) => ({ file: 't.test.yml', name: `case ${i + 1}` }));
  const runs: PlannedRun[] = [];
  const outcomes = new Map<string, RunOutcome>();
  for (let c = 0; c < cases; c++)
    for (const version of ['base', 'head'] as const)
      for (let r = 1; r <= k; r++) {
        const session = `runs/s1-c${c}-${version}-r${r}.jsonl`;
        runs.push({ case: c, version, stage: 1, repeat: r, session });
        outcomes.set(session, of(c, version, r));
      }
  return { entries, runs, outcomeOf: (run: PlannedRun) => outcomes.get(run.session)! };
}

const decide = (e: ReturnType<typeof experimentOf>, design = DEFAULT_DESIGN) =>
  verdictOf(e.entries, e.runs, e.outcomeOf, (o) => o.pass, design, DEFAULT_GUARDRAILS, 'seed');
const ONE_STAGE = { ...DEFAULT_DESIGN, stages: 1 as const };

describe('the verdict', () => {
  it('a clear regression is REJECT candidate_regressed, with the cases counted and every guardrail held', () => {
    const result = decide(experimentOf(20, 5, (_, version) => outcome(version === 'base')))!;
    expect(result).toMatchObject({ verdict: 'REJECT', reason: 'candidate_regressed', stage: 1, runs: 200, warnings: [] });
    expect(result.cases[0]).toEqual({ file: 't.test.yml', name: 'case 1', base: { passes: 5, runs: 5 }, head: { passes: 0, runs: 5 } });
    expect(result.guardrails.map((g) => [g.id, g.held])).toEqual([
      ['cost_per_run', true],
      ['refusals', true],
      ['failures', true],
      ['duplicate_findings', true],
    ]);
    expect(result.spent_usd).toBeCloseTo(2, 6);
  });

  it('as good on the measure but dearer by more than 20 %: REJECT guardrail_failed, the guardrail naming both means', () => {
    const result = decide(experimentOf(20, 5, (_, version) => outcome(true, { cost_usd: version === 'base' ? 0.01 : 0.0125 })))!;
    expect(result).toMatchObject({ verdict: 'REJECT', reason: 'guardrail_failed' });
    expect(result.guardrails[0]).toEqual({ id: 'cost_per_run', base: 0.01, head: 0.0125, limit: 0.012, held: false });
    const cheaper = decide(experimentOf(20, 5, (_, version) => outcome(true, { cost_usd: version === 'base' ? 0.01 : 0.0119 })))!;
    expect(cheaper.guardrails[0]!.held).toBe(true);
  });

  it('refusals, broken runs and duplicate findings each hold the head to the base plus their margin', () => {
    const result = decide(
      experimentOf(20, 5, (c, version, r) =>
        outcome(true, {
          refusals: version === 'head' && r === 1 ? 1 : 0,
          broke: version === 'head' && c < 2 && r === 2,
          duplicate_findings: version === 'head' ? 0.3 : 0.1,
        }),
      ),
    )!;
    expect(result.guardrails.map((g) => [g.id, g.base, g.head, g.held])).toEqual([
      ['cost_per_run', 0.01, 0.01, true],
      ['refusals', 0, 0.2, false],
      ['failures', 0, 0.02, true],
      ['duplicate_findings', 0.1, 0.3, false],
    ]);
    expect(result.verdict).toBe('REJECT');
  });

  it('a first stage that is unclear has no verdict yet; cases that always pass are named; few cases are a warning', () => {
    const unclear = experimentOf(4, 2, (c, version, r) => outcome(c === 0 ? true : (c + r + (version === 'head' ? 1 : 0)) % 2 === 0));
    expect(decide(unclear)).toBeUndefined();
    const all = decide(
      experimentOf(3, 5, (c) => outcome(c !== 2)),
      ONE_STAGE,
    )!;
    expect(all).toMatchObject({ verdict: 'INCONCLUSIVE', reason: 'evidence_insufficient' });
    expect(all.says_nothing).toEqual(['case 1', 'case 2', 'case 3']);
    expect(all.warnings).toEqual(['3 cases: an experiment says little with fewer than 20 inputs']);
  });
});

describe('the first difference between two requests', () => {
  it('names the first JSON path that differs, and nothing for equal values', () => {
    expect(firstDifference({ a: [1, { b: 'x' }] }, { a: [1, { b: 'x' }] })).toBeUndefined();
    expect(firstDifference({ system: [{ text: 'a' }, { text: 'b' }] }, { system: [{ text: 'a' }, { text: 'c' }] })).toBe('system[1].text');
    expect(firstDifference({ tools: [1] }, { tools: [1, 2] })).toBe('tools[1]');
    expect(firstDifference({ model: 'a', max_tokens: 1 }, { max_tokens: 1, model: 'b' })).toBe('model');
    expect(firstDifference({ a: 1 }, { a: 1, b: undefined })).toBeUndefined();
    expect(firstDifference({ a: [] }, { a: {} })).toBe('a');
    expect(firstDifference('x', 'y')).toBe('');
  });
});

describe('the verdict in Markdown', () => {
  it("links the worst case's page, mentions no one, and keeps a case name from breaking the table", () => {
    const e = experimentOf(20, 5, (c, version) => outcome(version === 'base' || c > 0));
    e.entries[0]!.name = 'case | with a pipe @octocat #12';
    const result = decide(e, ONE_STAGE)!;
    const experiment = {
      id: 'x',
      test_files: ['t.test.yml'],
      base: { ref: 'main', commit: 'a'.repeat(40) },
      head: { ref: 'the working tree', commit: null },
      design: { ...DEFAULT_DESIGN, repeat: 5 },
      batch: true,
      changes: [{ agent: 'lead', path: 'system[0].text', case: 'case 1' }],
    } as unknown as ExperimentFile;
    const body = experimentMarkdown(experiment, result, 'https://github.example/runs/1/artifacts/2');
    expect(body.split('\n')[0]).toBe(experimentMarker(['t.test.yml']));
    expect(body).toContain("📄 [The worst case's run](https://github.example/runs/1/artifacts/2) on the head");
    expect(body).toContain('base main (aaaaaaa) · head the working tree');
    expect(body).toContain('| case \\| with a pipe @\u200boctocat #\u200b12 | 5/5 | 0/5 |');
    expect(body).toContain('The edit touches @\u200blead at `system[0].text`.');
    expect(experimentMarker(['a--b.test.yml'])).toBe('<!-- conclave experiment: a- -b.test.yml -->');
  });
});

describe('the verdict, stage by stage', () => {
  it('an unclear first stage decided by the second on all the runs; the rates over every run of each version', () => {
    const e = experimentOf(3, 2, (_, version) => outcome(version === 'base'));
    // Three inputs of 2/2 against 0/2: p = 1/216, unclear at stage 1; stage 2 adds two runs each.
    expect(decide(e)).toBeUndefined();
    for (let c = 0; c < 3; c++)
      for (const version of ['base', 'head'] as const)
        for (const r of [1, 2]) {
          const session = `runs/s2-c${c}-${version}-r${r}.jsonl`;
          e.runs.push({ case: c, version, stage: 2, repeat: r, session });
        }
    const outcomes = new Map(e.runs.map((run) => [run.session, outcome(run.version === 'base')]));
    const result = verdictOf(
      e.entries,
      e.runs,
      (run) => outcomes.get(run.session)!,
      (o) => o.pass,
      DEFAULT_DESIGN,
      DEFAULT_GUARDRAILS,
      'seed',
    )!;
    expect(result).toMatchObject({
      verdict: 'REJECT',
      reason: 'candidate_regressed',
      stage: 2,
      runs: 24,
      primary: { grader: 'pass', base: 1, head: 0, effect: -1 },
    });
    expect(result.cases[0]).toMatchObject({ base: { passes: 4, runs: 4 }, head: { passes: 0, runs: 4 } });
  });

  it('a cost exactly at its limit holds; a guardrail with no values on one side holds and has no limit; a run naming no case is left out', () => {
    const at = decide(experimentOf(20, 5, (_, version) => outcome(true, { cost_usd: version === 'base' ? 0.01 : 0.012 })))!;
    expect(at.guardrails[0]).toMatchObject({ limit: 0.012, held: true });
    expect(at.guardrails[3]).toEqual({ id: 'duplicate_findings', base: null, head: null, limit: null, held: true });
    const e = experimentOf(20, 5, (_, version) => outcome(version === 'base'));
    e.runs.push({ case: 99, version: 'head', stage: 1, repeat: 1, session: 'runs/stray.jsonl' });
    const strayed = verdictOf(
      e.entries,
      e.runs,
      (run) => (run.case === 99 ? outcome(true) : e.outcomeOf(run)),
      (o) => o.pass,
      DEFAULT_DESIGN,
      DEFAULT_GUARDRAILS,
      'seed',
    )!;
    expect(strayed.cases.every((c) => c.head.runs === 5)).toBe(true);
  });

  it('one case is "1 case"; a case whose runs all passed says nothing, even with one version only; a case with no run is not named; NO-CHANGE ran nothing', () => {
    const one = decide(
      experimentOf(1, 5, () => outcome(true)),
      ONE_STAGE,
    )!;
    expect(one.warnings).toEqual(['1 case: an experiment says little with fewer than 20 inputs']);
    expect(one.says_nothing).toEqual(['case 1']);
    const e = experimentOf(2, 5, () => outcome(true));
    e.runs = e.runs.filter((r) => !(r.case === 1 && r.version === 'head'));
    expect(decide(e, ONE_STAGE)!.says_nothing).toEqual(['case 1', 'case 2']);
    const none = experimentOf(2, 5, () => outcome(true));
    none.runs = none.runs.filter((r) => r.case === 0);
    expect(decide(none, ONE_STAGE)!.says_nothing).toEqual(['case 1']);
    expect(noChange(e.entries)).toEqual({
      verdict: 'NO-CHANGE',
      reason: 'no_change',
      stage: 0,
      primary: null,
      guardrails: [],
      cases: [
        { file: 't.test.yml', name: 'case 1', base: { passes: 0, runs: 0 }, head: { passes: 0, runs: 0 } },
        { file: 't.test.yml', name: 'case 2', base: { passes: 0, runs: 0 }, head: { passes: 0, runs: 0 } },
      ],
      says_nothing: [],
      warnings: [],
      runs: 0,
      spent_usd: 0,
    });
  });
});
