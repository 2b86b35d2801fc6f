import type { Diagnostic } from '../workflow/diagnostic.js';
import type { LocatedText } from '../workflow/located.js';
import { closest } from '../workflow/suggest.js';
import { findMentions } from './mentions.js';

/** Warnings for `@name` in prompts and the kickoff that names no agent: such a message would reach no one. */
export function mentionWarnings(texts: readonly LocatedText[], agents: readonly string[]): Diagnostic[] {
  const names = new Set(agents);
  const out: Diagnostic[] = [];
  for (const text of texts) {
    for (const m of findMentions(text.text, names).unknown) {
      const match = closest(m.name, agents);
      const hint = match ? `did you mean @${match}?` : `the agents are ${agents.map((a) => `@${a}`).join(', ')}`;
      out.push({
        file: text.file,
        ...text.locate(m.start, m.end, m.start),
        severity: 'warning',
        message: `@${m.name} in ${text.label} names no agent (${hint})`,
      });
    }
  }
  return out;
}
