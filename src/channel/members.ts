import type { TeamGraph, TeamMember } from '../workflow/graph.js';

/**
 * The agents a channel knows: the declared team, then every agent spawned since, in the order
 * they joined (the order deliveries are sorted by, so that it is the same on every run).
 */
export class Members implements TeamGraph {
  readonly lead: string;
  readonly members = new Map<string, TeamMember>();
  readonly names = new Set<string>();
  private readonly rank = new Map<string, number>();

  constructor(team: TeamGraph) {
    this.lead = team.lead;
    for (const member of team.members.values()) this.add(member);
  }

  add(member: TeamMember): void {
    this.members.set(member.name, member);
    this.names.add(member.name);
    this.rank.set(member.name, this.rank.size);
  }

  rankOf(name: string): number {
    return this.rank.get(name)!;
  }
}
