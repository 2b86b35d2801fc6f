import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { mentionWarnings } from '../../src/channel/mention-lint.js';
import { loadWorkflow, WorkflowFileError } from '../../src/workflow/load.js';
import { readSession, SessionFileError } from '../../src/session/reader.js';
import { isFinished, replayable } from '../../src/session/recording.js';
import { summarize } from '../../src/session/summary.js';
import { spansOf } from '../../src/trace/spans.js';
import { conclave } from './cli.js';
import { mutateJson, mutateText } from './random.js';

/** The exit codes docs/workflow.md and the README document. */
export const DOCUMENTED = [0, 1, 2, 3, 4, 75];
export const STACK = /\n\s+at .*:\d+:\d+|internal error/;

/** A session line with one place changed (a value replaced by one of `values`, a key dropped), or its text mutated. */
export function mutateJsonLine(line: string, rand: () => number, values: readonly unknown[]): string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return mutateText(line, rand);
  }
  if (rand() < 0.1 || !mutateJson(value, rand, () => values[Math.floor(rand() * values.length)])) return mutateText(line, rand);
  return JSON.stringify(value);
}

/** `cases` mutations of `workflow` (one to three each), written as w0.yml… in `dir` and loaded in process: diagnostics with a line, never an exception. */
export async function fuzzWorkflows(workflow: string, cases: number, rand: () => number, dir: string, seed: number): Promise<void> {
  for (let n = 0; n < cases; n++) {
    let text = workflow;
    for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) text = mutateText(text, rand);
    const file = join(dir, `w${n}.yml`);
    writeFileSync(file, text);
    try {
      const { diagnostics, prompts, agents } = await loadWorkflow(file);
      mentionWarnings(prompts, agents);
      for (const d of diagnostics) expect(d.line, `case ${n} (seed ${seed})`).toBeGreaterThan(0);
    } catch (e) {
      if (e instanceof WorkflowFileError) continue;
      throw new Error(`case ${n} of seed ${seed} threw ${(e as Error).stack}\n--- the file:\n${text.slice(0, 2000)}`);
    }
  }
}

/**
 * The cases `picks` through the CLI, two at a time (the machine's two cores), each command bounded
 * at 30 s: every one ends with a documented exit code and no stack trace. The count of each code.
 */
export async function throughTheCli(picks: readonly number[], commands: (n: number) => string[][], dir: string, env: NodeJS.ProcessEnv, seed: number) {
  const codes = new Map<number, number>();
  for (let i = 0; i < picks.length; i += 2)
    await Promise.all(
      picks.slice(i, i + 2).map(async (n) => {
        for (const args of commands(n)) {
          let timer: NodeJS.Timeout | undefined;
          const r = await Promise.race([
            conclave(args, { cwd: dir, env }),
            new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`hung: conclave ${args.join(' ')} (seed ${seed})`)), 30_000))),
          ]).finally(() => clearTimeout(timer));
          const said = `${r.stdout}${r.stderr}`;
          expect(DOCUMENTED, `${args.join(' ')} (seed ${seed}): ${said.slice(0, 500)}`).toContain(r.code);
          expect(said, `${args.join(' ')} (seed ${seed})`).not.toMatch(STACK);
          codes.set(r.code, (codes.get(r.code) ?? 0) + 1);
        }
      }),
    );
  return Object.fromEntries(codes);
}

/**
 * A session's lines, mutated (`mutate` changes them in place), written as s0.jsonl… in `dir` and
 * read, traced, summarised and replayed in process, or refused by the reader naming the file:
 * never an exception. How many were refused.
 */
export function fuzzSessions(cases: number, mutate: (lines: string[]) => void, recorded: string, dir: string, seed: number): number {
  const lines = () => {
    const all = recorded.split('\n');
    mutate(all);
    return all;
  };
  return fuzzSessionFiles(cases, lines, dir, seed, (file) => {
    const record = readSession(file);
    spansOf(record.header, record.events);
    summarize(record);
    replayable(record.effective);
    isFinished(record);
  });
}

/** One to three lines of a session's text mutated (`mutateJsonLine`). */
export function mutatedLines(text: string, rand: () => number, values: readonly unknown[]): string[] {
  const lines = text.split('\n');
  for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) {
    const i = Math.floor(rand() * lines.length);
    lines[i] = mutateJsonLine(lines[i]!, rand, values);
  }
  return lines;
}

/**
 * `cases` sessions, case n's lines made by `linesOf(n)`, written as s0.jsonl… in `dir` and given to
 * `check`: a file the reader refuses must name itself; any other exception fails, with the case,
 * the seed and the file. How many were refused.
 */
export function fuzzSessionFiles(cases: number, linesOf: (n: number) => string[], dir: string, seed: number, check: (file: string, n: number) => void): number {
  let refused = 0;
  for (let n = 0; n < cases; n++) {
    const lines = linesOf(n);
    const file = join(dir, `s${n}.jsonl`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    try {
      check(file, n);
    } catch (e) {
      if (e instanceof SessionFileError) {
        refused++;
        expect(e.message, `case ${n} of seed ${seed}`).toContain(file);
        continue;
      }
      throw new Error(`case ${n} of seed ${seed} threw ${(e as Error).stack}\n--- the file:\n${lines.join('\n').slice(0, 3000)}`);
    }
  }
  return refused;
}
