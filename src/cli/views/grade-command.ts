import { EXIT } from '../../exit-codes.js';
import { gradersShown, gradeSession, totalOf, type GraderResult } from '../../session/graders/graders.js';
import { readSession, SessionFileError } from '../../session/reader.js';
import { printableJson } from '../command-guard.js';
import { printable } from '../output/terminal-text.js';
import { asUsageError } from '../usage-error.js';

/**
 * `conclave grade SESSION… [--json]` (docs/graders.md): every grader of each session, from the
 * session alone (no request, no key); with several, their total too.
 */
export function gradeCommand(files: readonly string[], options: { json?: boolean }): number {
  const graded = files.map((session) => ({ session, graders: gradeSession(asUsageError(() => readSession(session), SessionFileError)) }));
  const total = graded.length > 1 ? totalOf(graded.map((g) => g.graders)) : undefined;
  if (options.json) {
    process.stdout.write(`${printableJson(total ? { sessions: graded, total } : graded[0])}\n`);
    return EXIT.ok;
  }
  const lines: string[] = [];
  for (const { session, graders } of graded) lines.push(session, ...rows(graders), '');
  if (total) lines.push(`total of ${graded.length} sessions (summed, or averaged where a grader is a share)`, ...rows(total), '');
  lines.push('What each grader measures: docs/graders.md');
  process.stdout.write(printable(`${lines.join('\n')}\n`));
  return EXIT.ok;
}

/** A line per grader: its value, then what stands behind it (or, where nothing does, what it measures). */
function rows(results: Record<string, GraderResult>): string[] {
  const shown = gradersShown(results);
  const width = Math.max(...shown.map((g) => g.id.length));
  return shown.map(
    ({ id, value, behind, means }) =>
      `  ${id.padEnd(width)}  ${(value === null || value === undefined ? '—' : String(value)).padStart(10)}  ${behind ?? means}`,
  );
}
