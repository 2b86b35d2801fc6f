import { createTwoFilesPatch, diffArrays } from 'diff';
import { diff3Merge } from 'node-diff3';
import { thousands } from '../thousands.js';

/**
 * How an edit of a document meets the changes made since its base: libraries, not a merge of our
 * own (docs/workflow.md: documents). Both are bounded, so that no text a model writes can hold
 * the run's one thread (and with it signals and limits) for long: node-diff3's LCS scans its
 * candidates for every pair of equal lines, about (pairs × the shorter side) steps, which a
 * 5,000-line Markdown file with blank lines between paragraphs takes 30 s to do; jsdiff's Myers
 * diff takes (lines × edits).
 */

/** The most steps one LCS of a merge may take (about a quarter of a second here). */
export const MERGE_WORK_LIMIT = 250_000_000;
/**
 * The most lines a diff shown to the owner may add or remove. jsdiff's work grows with its square:
 * 2,000 took about 0.3 s for two 50,000-line texts here (a dozen edits in one answer held the run
 * for seconds); 500 takes 40 ms at most. A larger change is shown whole.
 */
export const DIFF_EDIT_LIMIT = 500;

export type Merge = { text: string } | { conflict: string } | { tooCostly: string };

/**
 * An edit made against `base` applied to `current`, merged three ways (node-diff3, line by line).
 * When the texts are too large for node-diff3 whole, the lines equal in all three at the start and
 * at the end are set aside first, as git's merge does, so that it works on the part that changed
 * (at the price of a conflict now and then where the whole texts would have merged: a line
 * repeated near a change can be matched either way). Changes that touch the same lines conflict:
 * the conflict is returned, shown as diff3 shows it. A merge whose work would pass the limit is not
 * made (`tooCostly`, saying why): the same texts always give the same answer, so a resumed run
 * decides as the first did.
 */
export function mergeEdit(current: string, base: string, edited: string, labels: { current: string; base: string; edit: string }): Merge {
  if (current === base) return { text: edited };
  const [a, o, b] = [lines(current), lines(base), lines(edited)];
  // The texts whole when node-diff3 can take them (so that it aligns them as it would), else without the lines alike at both ends.
  const whole = workOf(a, o, b) <= MERGE_WORK_LIMIT;
  const head = whole ? 0 : commonHead(a, o, b);
  const tail = whole ? 0 : commonTail(a, o, b, head);
  const middle = (x: string[]) => x.slice(head, x.length - tail);
  const [am, om, bm] = [middle(a), middle(o), middle(b)];
  const work = workOf(am, om, bm);
  if (work > MERGE_WORK_LIMIT)
    return {
      tooCostly:
        `the ${thousands(om.length)} lines between the changes hold too many equal lines to merge here ` +
        `(${work.toExponential(1)} steps, past ${MERGE_WORK_LIMIT.toExponential(1)})`,
    };
  const out: string[] = [];
  const conflicts: string[] = [];
  for (const region of diff3Merge(am, om, bm)) {
    if (region.ok) for (const line of region.ok) out.push(line);
    else if (region.conflict) {
      const { a: mine, o: original, b: theirs } = region.conflict;
      conflicts.push([`<<<<<<< ${labels.current}`, ...mine, `||||||| ${labels.base}`, ...original, '=======', ...theirs, `>>>>>>> ${labels.edit}`].join('\n'));
    }
  }
  if (conflicts.length) return { conflict: conflicts.join('\n…\n') };
  return { text: [...a.slice(0, head), ...out, ...a.slice(a.length - tail)].join('\n') };
}

/** Split into lines such that joining with "\n" gives the text back (a final newline is an empty last line). */
function lines(text: string): string[] {
  return text.split('\n');
}

/** How many lines the three begin with alike. */
function commonHead(a: string[], o: string[], b: string[]): number {
  const most = Math.min(a.length, o.length, b.length);
  let n = 0;
  while (n < most && a[n] === o[n] && o[n] === b[n]) n++;
  return n;
}

/** How many lines the three end with alike, after the first `head`. */
function commonTail(a: string[], o: string[], b: string[], head: number): number {
  const most = Math.min(a.length, o.length, b.length) - head;
  let n = 0;
  while (n < most && a[a.length - 1 - n] === o[o.length - 1 - n] && o[o.length - 1 - n] === b[b.length - 1 - n]) n++;
  return n;
}

/** The steps of node-diff3's merge at most: the longer of its two LCS. */
function workOf(a: string[], o: string[], b: string[]): number {
  return Math.max(lcsWork(o, a), lcsWork(o, b));
}

/** The steps node-diff3's LCS takes at most: each pair of equal lines scans at most the shorter side's candidates. */
function lcsWork(x: string[], y: string[]): number {
  const counts = new Map<string, number>();
  for (const line of x) counts.set(line, (counts.get(line) ?? 0) + 1);
  let pairs = 0;
  for (const line of y) pairs += counts.get(line) ?? 0;
  return pairs * Math.min(x.length, y.length);
}

/** The mask the session file writes in place of a secret. */
const MASK = '***';

/**
 * The real text of a document that a resumed run rebuilt from its masked recording, or why it
 * cannot be known. `recordedFirst` is the first text as recorded (masked), `realFirst` the same
 * text as the run reads it now, `final` the text the run ended with (rebuilt from masked events).
 * The lines of `final` that came unchanged from the first text take their real form; a line the
 * agents wrote that holds the mask may have held a secret, and cannot be restored. The result,
 * masked, must be `final` again.
 */
export function unmaskedText(
  realFirst: string | undefined,
  recordedFirst: string,
  final: string,
  mask: (text: string) => string,
): { text: string } | { lost: string } {
  if (!final.includes(MASK)) return { text: final };
  if (realFirst === undefined || mask(realFirst) !== recordedFirst)
    return { lost: 'its first text is no longer what the run began with, so the secrets the session masks in it cannot be restored' };
  const real = lines(realFirst);
  const recorded = lines(recordedFirst);
  if (real.length !== recorded.length) return { lost: 'a secret in its first text spans lines, so its masked lines cannot be restored' };
  const parts = diffArrays(recorded, lines(final), { maxEditLength: DIFF_EDIT_LIMIT });
  if (!parts) return { lost: 'it changed too much since its first text to restore the secrets the session masks in it' };
  const out: string[] = [];
  let at = 0;
  for (const part of parts) {
    if (part.removed) at += part.value.length;
    else if (part.added) {
      if (part.value.some((line) => line.includes(MASK))) return { lost: "an agent's change holds a secret the session masks, which cannot be restored" };
      for (const line of part.value) out.push(line);
    } else for (let i = 0; i < part.value.length; i++) out.push(real[at++]!);
  }
  const text = out.join('\n');
  return mask(text) === final ? { text } : { lost: 'the secrets the session masks in it cannot be restored line by line' };
}

/** A unified diff from `before` to `after`, with its two names as headers; undefined when it would add or remove more than DIFF_EDIT_LIMIT lines. */
export function unifiedDiff(beforeName: string, before: string, afterName: string, after: string): string | undefined {
  const patch = createTwoFilesPatch(beforeName, afterName, before, after, undefined, undefined, { context: 3, maxEditLength: DIFF_EDIT_LIMIT });
  // The patch starts with a line of "=" that says nothing.
  return patch?.replace(/^=+\n/, '').trimEnd();
}
