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
/** A character right before `@` that makes it part of a word, an email or a path, not a mention. */
const GLUED_BEFORE = /[\p{L}\p{N}_.\-/@+]/u;
/** A character right after a name that makes it part of a longer word. */
const GLUED_AFTER = /[\p{L}\p{N}/]/u;

/**
 * Finds `@name` mentions as routing defines them (docs/design.md: routing): exact names of letters, digits, `-` and `_`
 * (so the longest name is matched: `@code-review` is never `@code`), trailing punctuation
 * allowed, nothing inside Markdown code, no email addresses, scoped packages or paths.
 */
export function findMentions(text: string, agents: ReadonlySet<string>): MentionScan {
  const scan: MentionScan = { known: [], unknown: [], all: false };
  const masked = maskCode(text);
  for (let at = masked.indexOf('@'); at !== -1; at = masked.indexOf('@', at + 1)) {
    if (at > 0 && GLUED_BEFORE.test(masked[at - 1]!)) continue;
    NAME_CHARS.lastIndex = at + 1;
    const run = NAME_CHARS.exec(masked)?.[0];
    if (!run) continue;
    const after = masked[at + 1 + run.length];
    if (after !== undefined && GLUED_AFTER.test(after)) continue;
    const name = agents.has(run) || run === ALL ? run : run.replace(/[-_]+$/, '');
    const mention = { name, start: at, end: at + 1 + name.length };
    if (name === ALL) scan.all = true;
    else if (agents.has(name)) scan.known.push(mention);
    else scan.unknown.push({ ...mention, name: run, end: at + 1 + run.length });
  }
  return scan;
}
