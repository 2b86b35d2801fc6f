import { maskBeforeCut } from '../session/masker.js';

/** The candidate closest to `word` by edit distance, if it is close enough to be a likely typo. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const limit = Math.max(1, Math.floor(word.length / 3));
  for (const candidate of candidates) {
    if (candidate === word) continue;
    const distance = candidate.toLowerCase() === word.toLowerCase() ? 0 : editDistance(word, candidate);
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` (did you mean "x"?)` when a close candidate exists, or one that `word` begins (`budget` → `budget_usd`), else an empty string. */
export function didYouMean(word: string, candidates: Iterable<string>, prefix = ''): string {
  const list = [...candidates];
  const match = closest(word, list) ?? (word.length >= 3 ? list.find((c) => c !== word && c.startsWith(word)) : undefined);
  return match === undefined ? '' : ` (did you mean "${prefix}${match}"?)`;
}

/** Levenshtein distance, counting a swap of two neighbours as one edit. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = value;
    }
  }
  return d[a.length]![b.length]!;
}

/** A short description of a value found where something else was expected. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty value';
  if (typeof value === 'string') return `the string ${quote(value)}`;
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  return 'a mapping';
}

/** A value in double quotes, cut short when long. */
export function quote(value: unknown): string {
  const text = maskBeforeCut(typeof value === 'string' ? value : String(value));
  const short = text.length > 40 ? `${text.slice(0, 39)}…` : text;
  return JSON.stringify(short);
}

/** `"a", "b" or "c"` */
export function listOr(values: readonly unknown[]): string {
  const quoted = values.map((v) => JSON.stringify(v));
  if (quoted.length <= 1) return quoted.join('');
  return `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}
