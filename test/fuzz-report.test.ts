import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportModel } from '../src/report/report-model.js';
import { reportPage } from '../src/report/report-page.js';
import { readSession } from '../src/session/reader.js';
import { ROOT } from './helpers/cli.js';
import { fuzzSessionFiles, mutatedLines, throughTheCli } from './helpers/fuzz-cases.js';
import { random } from './helpers/random.js';

/**
 * Seeded fuzzing of `conclave report` (issue 70): 1,000 mutated sessions (examples/ recordings,
 * with markup and URLs among the values put in) read and made into a page in process, and a sample
 * through the CLI: every one a page whose only script is its own, or a refusal naming the file;
 * never a stack trace. FUZZ_SEED=N repeats a run.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 1_000;
const VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  1e300,
  '',
  [],
  {},
  { a: 1 },
  'lead',
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  'javascript:alert(1)',
  'https://tracker.example/x.png',
  '\u2028\ud800',
  '"><svg onload=alert(1)>',
];
const SESSIONS = ['pr-review', 'migration-plan', 'review-per-file'].map((n) => readFileSync(join(ROOT, 'examples', `${n}.session.jsonl`), 'utf8').trimEnd());

describe(`fuzzing conclave report (seed ${SEED})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-fuzz-report-'));

  it(`${CASES} mutated sessions: a page with no script but its own, or refused with the file named; never an exception`, () => {
    const rand = random(SEED);
    const refused = fuzzSessionFiles(
      CASES,
      (n) => mutatedLines(SESSIONS[n % SESSIONS.length]!, rand, VALUES),
      dir,
      SEED,
      (file, n) => {
        const page = reportPage(reportModel(readSession(file)));
        expect(page.match(/<script/g), `case ${n} (seed ${SEED})`).toHaveLength(1);
        expect(page, `case ${n} (seed ${SEED})`).not.toMatch(/<img|<svg onload|<iframe|href="javascript:/);
      },
    );
    expect(refused).toBeGreaterThan(CASES / 20);
    expect(refused).toBeLessThan(CASES);
  });

  it(
    'a sample through the CLI: exit 0 or 2, never a stack trace or a hang',
    async () => {
      const rand = random(SEED + 1);
      // FUZZ_CLI_ALL=1 sends every case through the CLI (docs/testing.md has the figures).
      const picks = process.env.FUZZ_CLI_ALL ? Array.from({ length: CASES }, (_, n) => n) : Array.from({ length: 8 }, () => Math.floor(rand() * CASES));
      const codes = await throughTheCli(picks, (n) => [['report', `s${n}.jsonl`, '-o', `s${n}.html`]], dir, {}, SEED);
      if (process.env.FUZZ_CLI_ALL) console.log(`exit codes over ${picks.length} sessions: ${JSON.stringify(codes)}`);
      for (const code of Object.keys(codes)) expect([0, 2]).toContain(Number(code));
    },
    process.env.FUZZ_CLI_ALL ? 7_200_000 : 120_000,
  );
});
