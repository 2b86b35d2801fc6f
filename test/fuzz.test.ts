import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mutateJson, mutateText, random } from './helpers/random.js';
import { mentionWarnings } from '../src/channel/mention-lint.js';
import { readSession, SessionFileError } from '../src/session/reader.js';
import { isFinished, replayable } from '../src/session/recording.js';
import { summarize } from '../src/session/summary.js';
import { loadWorkflow, WorkflowFileError } from '../src/workflow/load.js';
import { conclave, ROOT } from './helpers/cli.js';

/**
 * Seeded fuzzing of what users hand conclave (issue 11): mutated workflows and mutated session
 * files. Every case must end in diagnostics or a SessionFileError — the errors that become a
 * plain exit 2 — never in another exception. The seed is printed; FUZZ_SEED=N repeats a run.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 600;

const VALUES: unknown[] = [null, true, 0, -1, 1.5, 1e308, '', 'x', [], {}, [null], { a: 1 }, '***', 'lead', 2 ** 53 + 1];

/** Replaces one value somewhere in a JSON line, or one key, or cuts it. */
function mutateJsonLine(line: string, rand: () => number): string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return mutateText(line, rand);
  }
  if (rand() < 0.15 || !mutateJson(value, rand, () => VALUES[Math.floor(rand() * VALUES.length)])) return mutateText(line, rand);
  return JSON.stringify(value);
}

describe(`fuzzing (seed ${SEED})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-fuzz-'));
  const workflows = [
    ...readdirSync(join(ROOT, 'examples'))
      .filter((f) => f.endsWith('.yml'))
      .map((f) => join(ROOT, 'examples', f)),
    ...readdirSync(join(ROOT, 'test/corpus'))
      .filter((f) => f.endsWith('.yml'))
      .map((f) => join(ROOT, 'test/corpus', f)),
  ].map((f) => readFileSync(f, 'utf8'));
  const sessions = ['finished.jsonl', 'stopped.jsonl', 'resumed.jsonl'].map((f) => readFileSync(join(ROOT, 'test/fixtures/session/format-1', f), 'utf8'));

  it(`${CASES} mutated workflows end in diagnostics, never in an exception`, async () => {
    const rand = random(SEED);
    for (let n = 0; n < CASES; n++) {
      let text = workflows[Math.floor(rand() * workflows.length)]!;
      for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) text = mutateText(text, rand);
      const file = join(dir, `w${n}.yml`);
      writeFileSync(file, text);
      try {
        const { diagnostics, prompts, agents } = await loadWorkflow(file);
        mentionWarnings(prompts, agents);
        for (const d of diagnostics) expect(d.line, `case ${n} (seed ${SEED})`).toBeGreaterThan(0);
      } catch (e) {
        if (e instanceof WorkflowFileError) continue;
        throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}\n--- the file:\n${text.slice(0, 2000)}`);
      }
    }
  });

  it(`${CASES} mutated session files are read, summarised and replayed, or refused with their line`, () => {
    const rand = random(SEED + 1);
    for (let n = 0; n < CASES; n++) {
      const lines = sessions[Math.floor(rand() * sessions.length)]!.trimEnd().split('\n');
      for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) {
        const i = Math.floor(rand() * lines.length);
        lines[i] = mutateJsonLine(lines[i]!, rand);
      }
      const file = join(dir, `s${n}.jsonl`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      try {
        const record = readSession(file);
        summarize(record);
        replayable(record.effective);
        isFinished(record);
      } catch (e) {
        if (e instanceof SessionFileError) {
          expect(e.message, `case ${n} of seed ${SEED}`).toContain(file);
          continue;
        }
        throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}\n--- the file:\n${lines.join('\n').slice(0, 2000)}`);
      }
    }
  });

  it('a sample of them through the CLI: exit 0 or 2, never a stack trace', async () => {
    const rand = random(SEED + 2);
    const picks = Array.from({ length: 12 }, () => Math.floor(rand() * CASES));
    for (const n of picks) {
      for (const args of [
        ['validate', `w${n}.yml`],
        ['show', `s${n}.jsonl`],
      ]) {
        const r = await conclave(args, { cwd: dir });
        const said = `${r.stdout}${r.stderr}`;
        expect([0, 2], `${args.join(' ')} (seed ${SEED}): ${said.slice(0, 500)}`).toContain(r.code);
        expect(said).not.toMatch(/\n\s+at .*:\d+:\d+|internal error/);
      }
    }
  }, 60_000);
});
