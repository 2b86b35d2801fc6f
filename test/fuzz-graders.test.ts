import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GRADER_IDS, gradeSession } from '../src/session/graders/graders.js';
import { readSession } from '../src/session/reader.js';
import { ROOT } from './helpers/cli.js';
import { fuzzSessionFiles, mutatedLines, throughTheCli } from './helpers/fuzz-cases.js';
import { random } from './helpers/random.js';

/**
 * Seeded fuzzing of `conclave grade` (issue 82): 1,000 mutated sessions (a graded review with
 * findings, redundant calls, mentions and a rubric's score; the examples' recordings with votes) graded in process,
 * and a sample through the CLI: every grader a finite number or null, or the file refused with its
 * name; never a stack trace. FUZZ_SEED=N repeats a run.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 1_000;
const VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  1e300,
  Number.MAX_SAFE_INTEGER,
  '',
  [],
  {},
  { a: 1 },
  'lead',
  'rev-1',
  '@lead',
  'complete',
  'annotate',
  'x.js',
  'NaN',
];
const SESSIONS = [
  readFileSync(join(ROOT, 'test/fixtures/sessions/graded-review.session.jsonl'), 'utf8'),
  ...['pr-review', 'review-per-file', 'issue-triage'].map((n) => readFileSync(join(ROOT, 'examples', `${n}.session.jsonl`), 'utf8')),
].map((s) => s.trimEnd());

describe(`fuzzing conclave grade (seed ${SEED})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-fuzz-grade-'));

  it(`${CASES} mutated sessions: every grader a finite number or null, or refused with the file named; never an exception`, () => {
    const rand = random(SEED);
    const refused = fuzzSessionFiles(
      CASES,
      (n) => mutatedLines(SESSIONS[n % SESSIONS.length]!, rand, VALUES),
      dir,
      SEED,
      (file, n) => {
        const graded = gradeSession(readSession(file));
        for (const id of GRADER_IDS) {
          const value = graded[id]!.value;
          expect(value === null || Number.isFinite(value), `case ${n} (seed ${SEED}): ${id} is ${value}`).toBe(true);
        }
        JSON.stringify(graded);
      },
    );
    expect(refused).toBeGreaterThan(CASES / 20);
    expect(refused).toBeLessThan(CASES);
  });

  it(
    'a sample through the CLI: exit 0 or 2, never a stack trace or a hang',
    async () => {
      const rand = random(SEED + 1);
      const picks = process.env.FUZZ_CLI_ALL ? Array.from({ length: CASES }, (_, n) => n) : Array.from({ length: 8 }, () => Math.floor(rand() * CASES));
      const codes = await throughTheCli(picks, (n) => [['grade', `s${n}.jsonl`, '--json']], dir, {}, SEED);
      if (process.env.FUZZ_CLI_ALL) console.log(`exit codes over ${picks.length} sessions: ${JSON.stringify(codes)}`);
      for (const code of Object.keys(codes)) expect([0, 2]).toContain(Number(code));
    },
    process.env.FUZZ_CLI_ALL ? 7_200_000 : 120_000,
  );
});
