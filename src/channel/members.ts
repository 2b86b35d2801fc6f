import type { TeamGraph, TeamMember } from '../workflow/graph.js';

/**
 * The agents a channel knows: the declared team, then every agent spawned since, in the order
 * they joined (the order deliveries are sorted by, so that it is the same on every run).
 */
export class Members implements TeamGraph {
  readonly lead: string;
  readonly members = new Map<string, TeamMember>();
  readonly names = new Set<string>();
  readonly groups: ReadonlyMap<string, readonly string[]>;
  /** What a mention may name: an agent, or a group (an agent with for_each, for all its instances). */
  readonly mentionable = new Set<string>();
  private readonly rank = new Map<string, number>();

  constructor(team: TeamGraph) {
    this.lead = team.lead;
    this.groups = team.groups ?? new Map();
    for (const group of this.groups.keys()) this.mentionable.add(group);
    for (const member of team.members.values()) this.add(member);
  }

  add(member: TeamMember): void {
    this.members.set(member.name, member);
    this.names.add(member.name);
    this.mentionable.add(member.name);
    this.rank.set(member.name, this.rank.size);
  }

  rankOf(name: string): number {
    return this.rank.get(name)!;
  }
}
