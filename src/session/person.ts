/**
 * A person who votes (docs/workflow.md: votes from people): a GitHub user `@login`, or a team
 * `@org/team` any of whose members may cast its vote. Agents' names never start with `@`, so a
 * voter is one or the other by its first character. The workflow schema repeats this pattern.
 */
export const PERSON = /^@[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\/[A-Za-z0-9][A-Za-z0-9_.-]{0,99})?$/;

/** A GitHub login (what a vote's `voter` names), without the `@`. */
export const LOGIN = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}$/;

export function isPerson(voter: string): boolean {
  return voter.startsWith('@');
}

/** `@org/team` as `{ org, team }`; undefined for a user. */
export function teamOf(voter: string): { org: string; team: string } | undefined {
  const slash = voter.indexOf('/');
  return slash === -1 ? undefined : { org: voter.slice(1, slash), team: voter.slice(slash + 1) };
}

/** A voter as a report names it: `@agent` for an agent, a person or team as written (`@octocat`, `@org/team`). */
export function voterLabel(voter: string): string {
  return isPerson(voter) ? voter : `@${voter}`;
}

/**
 * Who cast a people seat's vote, as the reports show it (docs/github-action.md: votes from
 * people): the seat, then, when a person filled it, their login and the permission GitHub said
 * they had (`@acme/maintainers, by @maya (maintain)`). `link` writes the comment's address.
 */
export function castLabel(voter: string, cast: { voter: string; url: string | null; permission: string } | undefined, link?: (url: string) => string): string {
  if (!cast) return voterLabel(voter);
  const seat = voter.toLowerCase() === `@${cast.voter}`.toLowerCase() ? `@${cast.voter}` : `${voterLabel(voter)}, by @${cast.voter}`;
  return `${seat} (${cast.permission}${cast.url && link ? `, ${link(cast.url)}` : ''})`;
}
