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
 * agent's message to the manager it reports to; the lead's reaches no one. The workflow's people are
 * known names: a mention of one reaches no one, and is not `unknown`.
 */
export function route(team: TeamGraph, names: ReadonlySet<string>, kind: MessageKind, sender: string, text: string, people: readonly string[] = []): Routing {
  const scan = findMentions(text, names);
  // A group's name (an agent with for_each) stands for each of its instances.
  const mentioned = (scan.all ? [...names] : scan.known.map((m) => m.name)).flatMap((name) => team.groups?.get(name) ?? [name]);
  const recipients = [...new Set(mentioned)].filter((name) => name !== sender || kind !== 'agent');
  if (recipients.length === 0) {
    const fallback = kind === 'kickoff' ? team.lead : kind === 'agent' ? team.members.get(sender)?.reportsTo : null;
    if (fallback) recipients.push(fallback);
  }
  return { recipients, unknown: notPeople([...new Set(scan.unknown.map((m) => m.name))], people) };
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

/** Names mentioned that are none of the workflow's people (`@login`, `@org/team`). */
function notPeople(unknown: readonly string[], people: readonly string[]): string[] {
  const known = new Set(people.flatMap((p) => [p.slice(1).toLowerCase(), p.slice(1).split('/')[0]!.toLowerCase()]));
  return unknown.filter((name) => !known.has(name.toLowerCase()));
}
