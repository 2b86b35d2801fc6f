import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CaseRun, RunJson } from '../src/cli/test/test-case-run.js';
import { checkCase } from '../src/cli/test/test-expect.js';
import { loadTestFile } from '../src/cli/test/test-file.js';
import { checkContextOf, loadSuites } from '../src/cli/test/test-suites.js';
import { readSession } from '../src/session/reader.js';
import { replayable } from '../src/session/recording.js';
import { ROOT } from './helpers/cli.js';
import { mutateJsonLine, throughTheCli } from './helpers/fuzz-cases.js';
import { mutateText, random } from './helpers/random.js';

/**
 * Seeded fuzzing of `conclave test` (issue 69): 1,000 mutated test files and 1,000 mutated
 * recordings of examples/pr-review through the test file's reader, the suites' loader and the
 * expectations' checks in process, and a sample of each through the CLI: every case ends in
 * diagnostics (exit 2), a result (0 or 1), never a stack trace or a hang (each bounded at 30 s).
 * FUZZ_SEED=N repeats a run.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 1_000;
/** How many cases go through the CLI: FUZZ_CLI_ALL=1 sends all (docs/testing.md has the figures). */
const SAMPLE = process.env.FUZZ_CLI_ALL ? CASES : 6;
const VALUES: unknown[] = [null, true, 0, -1, 1.5, '', 'x', [], {}, [null], { a: 1 }, 'lead', 'grep', 'request-changes', '`'.repeat(50)];

function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-fuzz-tests-'));
  for (const file of ['pr-review.yml', 'pr-review.session.jsonl', 'pr-review.test.yml']) cpSync(join(ROOT, 'examples', file), join(dir, file));
  return dir;
}

/** What `run --replay` of the recording prints, from the recording itself: the result the checks read. */
function resultOf(recording: string): RunJson {
  const ended = readSession(recording).events.find((e) => e.type === 'run_ended');
  if (ended?.type !== 'run_ended') throw new Error('the recording has no end');
  return {
    status: ended.status,
    reason: ended.reason,
    outputs: ended.outputs as Record<string, string>,
    usage: { cost_usd: 0.044124 },
    proposals: [{ id: 'verdict', status: 'decided', winner: 'request-changes' }],
    session: recording,
  };
}

describe(`fuzzing conclave test (seed ${SEED})`, () => {
  const dir = project();
  const testText = readFileSync(join(dir, 'pr-review.test.yml'), 'utf8');
  const recorded = readFileSync(join(dir, 'pr-review.session.jsonl'), 'utf8').trimEnd();
  const result = resultOf(join(dir, 'pr-review.session.jsonl'));

  it(`${CASES} mutated test files: read into cases or positioned diagnostics, and checked against the recorded run, never an exception`, async () => {
    const rand = random(SEED);
    let invalid = 0;
    for (let n = 0; n < CASES; n++) {
      let text = testText;
      for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) text = mutateText(text, rand);
      const file = join(dir, `t${n}.test.yml`);
      writeFileSync(file, text);
      try {
        const { test, diagnostics } = loadTestFile(file, dir);
        for (const d of diagnostics) expect(d.line, `case ${n} (seed ${SEED})`).toBeGreaterThan(0);
        if (!test) {
          invalid++;
          continue;
        }
        const { suites, diagnostics: more } = await loadSuites([file], {}, dir);
        for (const d of more) expect(d.line, `case ${n} (seed ${SEED})`).toBeGreaterThan(0);
        for (const suite of suites)
          for (const testCase of suite.test.cases) {
            const run: CaseRun = { code: 0, result, events: replayable(suite.recordings.get(testCase) ?? []), stderr: '', session: '', wallMs: 1 };
            for (const f of checkCase(testCase, run, checkContextOf(suite, testCase))) expect(f.line, `case ${n} (seed ${SEED})`).toBeGreaterThan(0);
          }
      } catch (e) {
        throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}\n--- the file:\n${text.slice(0, 2000)}`);
      }
    }
    expect(invalid).toBeGreaterThan(CASES / 10);
    // Most mutations leave a test to check: the checks are fuzzed, not only the reader.
    expect(invalid).toBeLessThan(CASES * 0.9);
  });

  it(`${CASES} mutated recordings: refused with their line, or their events checked against every expectation, never an exception`, async () => {
    const rand = random(SEED + 1);
    const { test } = loadTestFile(join(dir, 'pr-review.test.yml'), dir);
    const testCase = test!.cases[0]!;
    let refused = 0;
    for (let n = 0; n < CASES; n++) {
      const lines = recorded.split('\n');
      for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) {
        const i = Math.floor(rand() * lines.length);
        lines[i] = mutateJsonLine(lines[i]!, rand, VALUES);
      }
      const file = join(dir, `s${n}.session.jsonl`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      const suiteFile = join(dir, `s${n}.test.yml`);
      writeFileSync(suiteFile, testText.replace('session: pr-review.session.jsonl', `session: s${n}.session.jsonl`));
      try {
        const { suites, diagnostics } = await loadSuites([suiteFile], {}, dir);
        if (diagnostics.length > 0) {
          refused++;
          for (const d of diagnostics) expect(d.line, `case ${n} (seed ${SEED})`).toBeGreaterThan(0);
          continue;
        }
        const events = replayable(suites[0]!.recordings.get(suites[0]!.test.cases[0]!) ?? []);
        const run: CaseRun = { code: 0, result, events, stderr: '', session: '', wallMs: 1 };
        checkCase(testCase, run, checkContextOf(suites[0]!, suites[0]!.test.cases[0]!));
      } catch (e) {
        throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}\n--- the file:\n${lines.join('\n').slice(0, 3000)}`);
      }
    }
    expect(refused).toBeGreaterThan(CASES / 10);
    expect(refused).toBeLessThan(CASES * 0.9);
  });

  it(
    'a sample of both through the CLI ends with 0, 1 or 2, never a stack trace or a hang',
    async () => {
      const rand = random(SEED + 2);
      const picks = process.env.FUZZ_CLI_ALL ? Array.from({ length: CASES }, (_, n) => n) : Array.from({ length: SAMPLE }, () => Math.floor(rand() * CASES));
      const env = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', GITHUB_ACTIONS: '' };
      const codes = await throughTheCli(
        picks,
        (n) => [
          ['test', `t${n}.test.yml`],
          ['test', `s${n}.test.yml`],
        ],
        dir,
        env,
        SEED,
      );
      if (process.env.FUZZ_CLI_ALL) console.log(`exit codes over ${picks.length} cases × 2 commands: ${JSON.stringify(codes)}`);
      for (const code of Object.keys(codes)) expect([0, 1, 2], `seed ${SEED}`).toContain(Number(code));
    },
    process.env.FUZZ_CLI_ALL ? 7_200_000 : 120_000,
  );
});
