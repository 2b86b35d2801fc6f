import { maskCode } from './code-spans.js';

/** `@name` at [start, end) of a message (start is the `@`). */
export interface Mention {
  name: string;
  start: number;
  end: number;
}

export interface MentionScan {
  /** Mentions of agents that exist, in order, `@all` excluded. */
  known: Mention[];
  /** Mentions of names that are no agent. */
  unknown: Mention[];
  /** Whether `@all` was written. */
  all: boolean;
}

export const ALL = 'all';

const NAME_CHARS = /[A-Za-z0-9_-]+/y;
/**
 * Whether a character next to a mention glues it to a word: before the `@`, a letter, a digit or
 * one of `_.-/@+` (an email, a path, a scoped package); after the name, a letter, a digit or `/`.
 * For ASCII the classes are written out: V8 builds a regular expression's Unicode classes when the
 * expression is made (~0.5 ms each, at every start that checks a prompt), so those are made only
 * for the first other character.
 */
const GLUED_BEFORE_ASCII = /[A-Za-z0-9_.\-/@+]/;
const GLUED_AFTER_ASCII = /[A-Za-z0-9/]/;
let gluedUnicode: { before: RegExp; after: RegExp } | undefined;
const unicode = () => (gluedUnicode ??= { before: /[\p{L}\p{N}_.\-/@+]/u, after: /[\p{L}\p{N}/]/u });
const gluedBefore = (c: string) => (c < '\u0080' ? GLUED_BEFORE_ASCII : unicode().before).test(c);
const gluedAfter = (c: string) => (c < '\u0080' ? GLUED_AFTER_ASCII : unicode().after).test(c);

/**
 * Finds `@name` mentions as routing defines them (docs/design.md: routing): exact names of letters, digits, `-` and `_`
 * (so the longest name is matched: `@code-review` is never `@code`), trailing punctuation
 * allowed, nothing inside Markdown code, no email addresses, scoped packages or paths.
 */
export function findMentions(text: string, agents: ReadonlySet<string>): MentionScan {
  const scan: MentionScan = { known: [], unknown: [], all: false };
  const masked = maskCode(text);
  for (let at = masked.indexOf('@'); at !== -1; at = masked.indexOf('@', at + 1)) {
    if (at > 0 && gluedBefore(masked[at - 1]!)) continue;
    NAME_CHARS.lastIndex = at + 1;
    const run = NAME_CHARS.exec(masked)?.[0];
    if (!run) continue;
    const after = masked[at + 1 + run.length];
    if (after !== undefined && gluedAfter(after)) continue;
    const name = agents.has(run) || run === ALL ? run : run.replace(/[-_]+$/, '');
    const mention = { name, start: at, end: at + 1 + name.length };
    if (name === ALL) scan.all = true;
    else if (agents.has(name)) scan.known.push(mention);
    else scan.unknown.push({ ...mention, name: run, end: at + 1 + run.length });
  }
  return scan;
}
