import { createTwoFilesPatch } from 'diff';
import { diff3Merge } from 'node-diff3';

/** How an edit of a document meets the changes made since its base: libraries, not a merge of our own (docs/workflow.md: documents). */

export type Merge = { text: string } | { conflict: string };

/**
 * An edit made against `base` applied to `current`, merged three ways (node-diff3, line by line).
 * Changes that touch the same lines conflict: the conflict is returned, shown as diff3 shows it.
 */
export function mergeEdit(current: string, base: string, edited: string, labels: { current: string; base: string; edit: string }): Merge {
  if (current === base) return { text: edited };
  const regions = diff3Merge(lines(current), lines(base), lines(edited));
  const out: string[] = [];
  const conflicts: string[] = [];
  for (const region of regions) {
    if (region.ok) out.push(...region.ok);
    else if (region.conflict) {
      const { a, o, b } = region.conflict;
      conflicts.push([`<<<<<<< ${labels.current}`, ...a, `||||||| ${labels.base}`, ...o, '=======', ...b, `>>>>>>> ${labels.edit}`].join('\n'));
    }
  }
  return conflicts.length ? { conflict: conflicts.join('\n…\n') } : { text: out.join('\n') };
}

/** Split into lines such that joining with "\n" gives the text back (a final newline is an empty last line). */
function lines(text: string): string[] {
  return text.split('\n');
}

/** A unified diff from `before` to `after`, with its two names as headers. */
export function unifiedDiff(beforeName: string, before: string, afterName: string, after: string): string {
  const patch = createTwoFilesPatch(beforeName, afterName, before, after, undefined, undefined, { context: 3 });
  // The patch starts with a line of "=" that says nothing.
  return patch.replace(/^=+\n/, '').trimEnd();
}
