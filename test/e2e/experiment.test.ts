import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fake-anthropic/server.js';
import { conclave } from '../helpers/cli.js';
import { TEST_API_KEY } from '../helpers/run-workflow.js';
import { plantedRepository, plantedScript, plantedWorkflow, READ_PROMPT, REWORDED_PROMPT, SKIM_PROMPT } from '../fixtures/planted-bug.js';
import { goodExperiment } from '../fixtures/experiment-file.js';

/**
 * `conclave experiment` through the CLI (docs/experiments.md), against the test server whose
 * answers vary (test/fixtures/planted-bug.ts): an edit of a comment costs nothing; a prompt that
 * makes the planted bug missed is REJECTed with every call in message batches both versions
 * share; the verdict recomputed from the sessions alone; the estimate's ceiling; a rewording.
 * The full size (20 cases × 5, a 40-point drop) is measured in docs/experiments.md.
 */

let server: FakeAnthropic | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const env = (s: FakeAnthropic) => ({ ANTHROPIC_BASE_URL: s.url, ANTHROPIC_API_KEY: TEST_API_KEY });

interface ExperimentJson {
  id: string;
  verdict: string;
  reason: string;
  stage: number;
  primary: { grader: string; base: number; head: number; effect: number; interval: [number, number]; p: number } | null;
  guardrails: { id: string; held: boolean }[];
  cases: { name: string; base: { passes: number; runs: number }; head: { passes: number; runs: number } }[];
  runs: number;
  spent_usd: number;
  changes: { agent: string | null; path: string }[];
  dir: string;
}

/** The experiment's result as --json prints it, without where it was read from. */
const figures = (json: ExperimentJson) => {
  const { dir: _dir, ...rest } = json;
  return rest;
};

describe('conclave experiment', { timeout: 120_000 }, () => {
  it('an edit of a YAML comment: NO-CHANGE, exit 0, not one request (not even a count)', async () => {
    const repo = plantedRepository(3);
    writeFileSync(join(repo, 'planted.yml'), `# Reviewed by the team on Monday.\n${plantedWorkflow(READ_PROMPT)}`);
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'comment' }));
    const run = await conclave(['experiment', '--base', 'main', '--json', '-o', 'out'], { cwd: repo, env: env(server) });
    expect(run.code, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout) as ExperimentJson;
    expect(json).toMatchObject({ verdict: 'NO-CHANGE', reason: 'no_change', runs: 0, spent_usd: 0, changes: [] });
    expect(server.requests).toHaveLength(0);
    expect(server.counts).toHaveLength(0);
    const kept = JSON.parse(readFileSync(join(repo, 'out', 'experiment.json'), 'utf8')) as { result: { verdict: string }; base: { commit: string } };
    expect(kept.result.verdict).toBe('NO-CHANGE');
    expect(kept.base.commit).toMatch(/^[0-9a-f]{40}$/);
    const text = await conclave(['experiment', '--recompute', 'out'], { cwd: repo });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /^conclave experiment \S+: NO-CHANGE \(no_change\)\nbase main \([0-9a-f]{7}\) · head the working tree\nno request of any case differs/,
    );
  });

  it('a prompt that makes the planted bug missed: REJECT, exit 1, every call in batches both versions share; --recompute the same with no request and no key', async () => {
    const repo = plantedRepository(4);
    writeFileSync(join(repo, 'planted.yml'), plantedWorkflow(SKIM_PROMPT));
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'skim' }), { batches: { endsAfterMs: 200 } });
    const run = await conclave(['experiment', '--base', 'main', '--repeat', '2', '--json', '-o', 'out'], { cwd: repo, env: env(server) });
    expect(run.code, run.stderr).toBe(1);
    const json = JSON.parse(run.stdout) as ExperimentJson;
    expect(json).toMatchObject({ verdict: 'REJECT', reason: 'candidate_regressed', stage: 1, runs: 16 });
    expect(json.primary).toMatchObject({ grader: 'pass', base: 1, head: 0, effect: -1 });
    // Two runs an input say a rate only roughly: the interval is wide, and well below zero.
    const [lo, hi] = json.primary!.interval;
    expect(lo).toBeLessThan(hi);
    expect(hi).toBeLessThan(-0.3);
    expect(json.primary!.p).toBeCloseTo((1 / 6) ** 4, 6);
    expect(json.cases.map((c) => [c.name, c.base.passes, c.head.passes])).toEqual([
      ['case 1', 2, 0],
      ['case 2', 2, 0],
      ['case 3', 2, 0],
      ['case 4', 2, 0],
    ]);
    expect(json.guardrails.every((g) => g.held)).toBe(true);
    expect(json.changes).toEqual([{ agent: 'lead', path: 'system[0].text', case: 'case 1' }]);
    expect(json.spent_usd).toBeGreaterThan(0);
    expect(run.stderr).toContain('conclave: what the edit touches: @lead at system[0].text');
    expect(run.stderr).toMatch(/conclave: estimate: likely \$\d+\.\d{4} for the first stage, \$\d+\.\d{4} with the second/);
    // Every call went in a message batch, and the batches hold both versions' calls side by side.
    expect(server.requests).toHaveLength(16);
    expect(server.requests.filter((r) => !r.batch)).toHaveLength(0);
    const skims = (r: FakeAnthropic['requests'][number]) => JSON.stringify(r.body.system).includes('Skim the change');
    expect(server.batches.length).toBeLessThan(16);
    expect(server.batches.some((b) => b.requests.length > 1)).toBe(true);
    const byBatch = new Map<string, boolean[]>();
    for (const r of server.requests) byBatch.set(r.batch!, [...(byBatch.get(r.batch!) ?? []), skims(r)]);
    expect([...byBatch.values()].some((versions) => versions.includes(true) && versions.includes(false))).toBe(true);
    // Every run is an ordinary session, kept beside experiment.json.
    expect(readdirSync(join(repo, 'out', 'runs')).sort()).toHaveLength(16);
    const show = await conclave(['show', join('out', 'runs', 's1-c001-head-r1.jsonl')], { cwd: repo });
    expect(show.code, show.stderr).toBe(0);

    const requests = server.requests.length;
    const recomputed = await conclave(['experiment', '--recompute', 'out', '--json'], {
      cwd: repo,
      env: { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' },
    });
    expect(recomputed.code, recomputed.stderr).toBe(1);
    expect(figures(JSON.parse(recomputed.stdout) as ExperimentJson)).toEqual(figures(json));
    expect(server.requests).toHaveLength(requests);
    const text = await conclave(['experiment', '--recompute', 'out'], { cwd: repo });
    expect(text.stdout).toMatch(/: REJECT \(candidate_regressed\)\n/);
    expect(text.stdout).toMatch(/pass rate {3}base 100\.0 % {3}head 0\.0 % {3}effect −100\.0 points, 95 % interval \[−\d+\.\d, −\d+\.\d\], p = 0\.0007716\n/);
    expect(text.stdout).toMatch(/worst cases\n {2}case 1 {2}base 2\/2 {2}head 0\/2\n/);
    expect(text.stdout).toContain('warning: 4 cases: an experiment says little with fewer than 20 inputs');
  });

  it('--max-estimate-usd below the estimate: exit 3 before any model call', async () => {
    const repo = plantedRepository(2);
    writeFileSync(join(repo, 'planted.yml'), plantedWorkflow(SKIM_PROMPT));
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'ceiling' }), { batches: { endsAfterMs: 200 } });
    const run = await conclave(['experiment', '--base', 'main', '--max-estimate-usd', '0.001', '-o', 'out'], { cwd: repo, env: env(server) });
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(/conclave: the experiment would likely cost \$\d+\.\d{4}, over --max-estimate-usd 0\.001: nothing was run\n/);
    expect(server.requests).toHaveLength(0);
    expect(server.batches).toHaveLength(0);
    expect(existsSync(join(repo, 'out', 'runs'))).toBe(false);
  });

  it('--park: each stage parks while its batches are processed (exit 75); --resume goes on, stage by stage, to the verdict', async () => {
    const repo = plantedRepository(3);
    writeFileSync(join(repo, 'planted.yml'), plantedWorkflow(SKIM_PROMPT));
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'park' }), { batches: { endsAfterMs: 1_500 } });
    const api = server;
    const batchesEnded = async () => {
      while (api.batches.some((b) => b.endsAt > Date.now())) await new Promise((wait) => setTimeout(wait, 100));
    };
    const first = await conclave(['experiment', '--base', 'main', '--repeat', '2', '--park', '-o', 'out'], { cwd: repo, env: env(server) });
    expect(first.code, first.stderr).toBe(75);
    expect(first.stderr).toContain('conclave: parked: 12 runs of stage 1 wait for message batches; go on later with conclave experiment --resume out\n');
    expect(server.requests).toHaveLength(12);
    await batchesEnded();
    // Three inputs of 2/2 against 0/2: p = 1/216, above the first stage's share of alpha: a second stage, which parks too.
    const second = await conclave(['experiment', '--resume', 'out'], { cwd: repo, env: env(server) });
    expect(second.code, second.stderr).toBe(75);
    expect(second.stderr).toContain('conclave: stage 1 is unclear: a second stage of the same size runs\n');
    expect(second.stderr).toContain('parked: 12 runs of stage 2 wait');
    expect(server.requests).toHaveLength(24);
    await batchesEnded();
    const last = await conclave(['experiment', '--resume', 'out', '--json'], { cwd: repo, env: env(server) });
    expect(last.code, last.stderr).toBe(1);
    expect(JSON.parse(last.stdout)).toMatchObject({ verdict: 'REJECT', reason: 'candidate_regressed', stage: 2, runs: 24 });
    // Each run's one call was answered once, in a batch: nothing asked twice across the processes.
    expect(server.requests).toHaveLength(24);
    expect(server.requests.filter((r) => !r.batch)).toHaveLength(0);
    const again = await conclave(['experiment', '--resume', 'out'], { cwd: repo, env: env(server) });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('the experiment has its verdict (REJECT): print it with --recompute out');
  });

  it('a rewording the test server answers as the base: not REJECT', async () => {
    const repo = plantedRepository(4);
    writeFileSync(join(repo, 'planted.yml'), plantedWorkflow(REWORDED_PROMPT));
    server = await startFakeAnthropic(plantedScript({ found: () => 1, skimDrop: 1, seed: 'reword' }), { batches: { endsAfterMs: 200 } });
    const run = await conclave(['experiment', '--base', 'main', '--repeat', '2', '--json', '-o', 'out'], { cwd: repo, env: env(server) });
    expect(run.code, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout) as ExperimentJson & { says_nothing: string[] };
    expect(json.verdict).not.toBe('REJECT');
    // Four inputs, each 2 of 2 (then 4 of 4) in both versions: no difference, and too few runs to rule out a 10-point drop.
    expect(json).toMatchObject({ verdict: 'INCONCLUSIVE', reason: 'evidence_insufficient', stage: 2, runs: 32, primary: { effect: 0 } });
    expect(json.primary!.interval[0]).toBeLessThan(-0.1);
    expect(json.says_nothing).toEqual(['case 1', 'case 2', 'case 3', 'case 4']);
  });

  it("a user's mistakes: exit 2 with a sentence, nothing run", async () => {
    const repo = plantedRepository(1);
    const noBase = await conclave(['experiment'], { cwd: repo });
    expect(noBase).toMatchObject({ code: 2 });
    expect(noBase.stderr).toContain('give --base REF');
    const unknown = await conclave(['experiment', '--base', 'no-such-branch'], { cwd: repo });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('git knows no commit "no-such-branch" here');
    const option = await conclave(['experiment', '--base', '--head'], { cwd: repo });
    expect(option.code).toBe(2);
    const outside = mkdtempSync(join(tmpdir(), 'conclave-not-git-'));
    const notGit = await conclave(['experiment', '--base', 'main'], { cwd: outside, env: { GIT_CEILING_DIRECTORIES: tmpdir() } });
    expect(notGit.code).toBe(2);
    expect(notGit.stderr).toContain('is not in one');
    for (const flag of [
      ['--repeat', '0'],
      ['--max-estimate-usd', 'lots'],
      ['--min-effect', '150'],
    ]) {
      const bad = await conclave(['experiment', '--base', 'main', ...flag], { cwd: repo });
      expect(bad.code, flag.join(' ')).toBe(2);
      expect(bad.stderr, flag.join(' ')).toContain(flag[0]);
    }
    const primary = await conclave(['experiment', '--base', 'main', '--primary', 'duplicate_findings', '-o', 'p'], { cwd: repo });
    expect(primary.code).toBe(2);
    expect(primary.stderr).toContain("--primary duplicate_findings: a run passes on it by the case's bounds on that grader");
    const stray = await conclave(['experiment', '--recompute', 'nowhere'], { cwd: repo });
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('experiment.json: it does not exist');
  });

  it('--recompute reads experiment.json as hostile: a session outside runs/, a case out of range, a design that is not one', async () => {
    const repo = plantedRepository(1);
    const dir = join(repo, 'hostile');
    mkdirSync(dir);
    const good = goodExperiment('planted.test.yml');
    for (const [change, said] of [
      [{ runs: [{ case: 0, version: 'base', stage: 1, repeat: 1, session: '../../../etc/passwd' }] }, 'run 1 must name'],
      [{ runs: [{ case: 7, version: 'base', stage: 1, repeat: 1, session: 'runs/a.jsonl' }] }, 'run 1 must name'],
      [{ design: { minEffect: 'big' } }, '"design" must hold'],
      [{ test_files: ['/etc/x.test.yml'] }, '"test_files" must be paths inside'],
      [{ conclave_experiment: 2 }, 'no "conclave_experiment": 1'],
    ] as const) {
      writeFileSync(join(dir, 'experiment.json'), JSON.stringify({ ...good, ...change }));
      const bad = await conclave(['experiment', '--recompute', 'hostile'], { cwd: repo });
      expect(bad.code, said).toBe(2);
      expect(bad.stderr, said).toContain(said);
      expect(bad.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
