import type { TeamGraph } from '../workflow/graph.js';
import type { MessageKind } from './message.js';
import { findMentions } from './mentions.js';

export interface Routing {
  recipients: string[];
  /** Names mentioned that are no agent. */
  unknown: string[];
}

/**
 * Resolves who a message reaches (docs/design.md: routing): the agents it mentions (`@all`: everyone but the
 * sender; a self-mention is ignored). With no recipient, the kickoff goes to the lead and an
 * agent's message to the manager it reports to; the lead's reaches no one.
 */
export function route(team: TeamGraph, names: ReadonlySet<string>, kind: MessageKind, sender: string, text: string): Routing {
  const scan = findMentions(text, names);
  // A group's name (an agent with for_each) stands for each of its instances.
  const mentioned = (scan.all ? [...names] : scan.known.map((m) => m.name)).flatMap((name) => team.groups?.get(name) ?? [name]);
  const recipients = [...new Set(mentioned)].filter((name) => name !== sender || kind !== 'agent');
  if (recipients.length === 0) {
    const fallback = kind === 'kickoff' ? team.lead : kind === 'agent' ? team.members.get(sender)?.reportsTo : null;
    if (fallback) recipients.push(fallback);
  }
  return { recipients, unknown: [...new Set(scan.unknown.map((m) => m.name))] };
}

/** What the sender of a message is told when it mentions names that are no agent. */
export function unknownMentionNotice(unknown: readonly string[], agents: Iterable<string>): string {
  const one = unknown.length === 1;
  const names = unknown.map((n) => `@${n}`).join(', ');
  const roster = [...agents].map((n) => `@${n}`).join(', ');
  return (
    `Your last message mentions ${names}, which ${one ? 'is' : 'are'} not ${one ? 'an agent' : 'agents'}, so ${one ? 'it' : 'they'} did not receive it. ` +
    `The agents are ${roster}.`
  );
}
