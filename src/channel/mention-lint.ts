import type { Diagnostic } from '../workflow/diagnostic.js';
import type { LocatedText } from '../workflow/located.js';
import { closest } from '../workflow/suggest.js';
import { findMentions } from './mentions.js';

/**
 * Warnings for `@name` in prompts and the kickoff that names no agent: such a message would reach
 * no one. `madeAtRun` are the templates and `for_each` agents: their instances, `NAME-1`,
 * `NAME-2` …, exist once the run makes them, and a prompt may name them.
 */
export function mentionWarnings(texts: readonly LocatedText[], agents: readonly string[], madeAtRun: readonly string[] = []): Diagnostic[] {
  const names = new Set(agents);
  const instance = (name: string) => madeAtRun.some((base) => name.startsWith(`${base}-`) && /^[1-9][0-9]*$/.test(name.slice(base.length + 1)));
  const out: Diagnostic[] = [];
  for (const text of texts) {
    for (const m of findMentions(text.text, names).unknown.filter((m) => !instance(m.name))) {
      const match = closest(m.name, agents);
      const later = madeAtRun.length ? `, and those the run makes: ${madeAtRun.map((base) => `@${base}-1`).join(', ')} …` : '';
      const hint = match ? `did you mean @${match}?` : `the agents are ${agents.map((a) => `@${a}`).join(', ')}${later}`;
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
