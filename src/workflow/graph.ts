import { didYouMean } from './suggest.js';

export type Role = 'manager' | 'worker';

export interface TeamMember {
  name: string;
  role: Role;
  /** The manager this agent answers to; null for the lead. */
  reportsTo: string | null;
}

/** The resolved team: every agent's manager, and the one lead at the top. */
export interface TeamGraph {
  lead: string;
  members: ReadonlyMap<string, TeamMember>;
  /** Names that stand for several agents: an agent with for_each and its instances. */
  groups?: ReadonlyMap<string, readonly string[]>;
}

/** Where in an agent's entry a problem belongs. */
export type ProblemSite = 'name' | 'reports_to' | 'agents';

export interface GraphProblem {
  agent: string;
  site: ProblemSite;
  message: string;
}

export interface AgentEntry {
  name: string;
  role: Role;
  reports_to?: string;
}

/** Names an agent may not have: `@all` reaches everyone and `system` posts conclave's own messages. */
export const RESERVED_NAMES = ['all', 'system'];

/** Resolves reports_to and finds the lead; a graph comes back only when there is no problem. */
export function buildGraph(entries: readonly AgentEntry[]): { graph?: TeamGraph; problems: GraphProblem[] } {
  const problems: GraphProblem[] = [];
  const byName = new Map(entries.map((e) => [e.name, e]));
  const names = [...byName.keys()];
  const parent = new Map<string, string>();
  const troubled = new Set<string>();
  const problem = (agent: string, site: ProblemSite, message: string) => {
    problems.push({ agent, site, message });
    troubled.add(agent);
  };

  for (const e of entries) {
    if (RESERVED_NAMES.includes(e.name)) {
      problem(
        e.name,
        'name',
        `"${e.name}" is reserved (${e.name === 'all' ? '@all reaches every agent' : 'conclave posts its own messages as system'}); choose another name`,
      );
    }
    if (e.reports_to === undefined) continue;
    const target = byName.get(e.reports_to);
    if (!target) {
      problem(e.name, 'reports_to', `reports_to names "${e.reports_to}", which is not an agent${didYouMean(e.reports_to, names)}`);
    } else if (target.name === e.name) {
      problem(e.name, 'reports_to', `agent "${e.name}" cannot report to itself`);
    } else if (target.role !== 'manager') {
      problem(e.name, 'reports_to', `"${target.name}" is a worker; an agent can only report to a manager`);
    } else {
      parent.set(e.name, target.name);
    }
  }

  const topManagers = entries.filter((e) => e.role === 'manager' && e.reports_to === undefined);
  let lead: string | undefined;
  if (entries.length === 1) {
    lead = entries[0]!.name;
  } else if (topManagers.length === 0 && !entries.some((e) => e.role === 'manager')) {
    problem(entries[0]!.name, 'agents', `a team of ${entries.length} agents needs a manager to lead it: give one agent role: manager`);
  } else if (topManagers.length > 0) {
    lead = topManagers[0]!.name;
    for (const extra of topManagers.slice(1)) {
      problem(extra.name, 'name', `"${extra.name}" is a second top-level manager beside "${lead}"; a team has one lead, so give "${extra.name}" a reports_to`);
    }
  }
  if (lead !== undefined && topManagers.length <= 1) {
    for (const e of entries) {
      if (e.role === 'worker' && e.reports_to === undefined && e.name !== lead) parent.set(e.name, lead);
    }
  }

  const inCycle = new Set<string>();
  for (const e of entries) {
    const chain: string[] = [];
    for (let at: string | undefined = e.name; at !== undefined; at = parent.get(at)) {
      const seen = chain.indexOf(at);
      if (seen !== -1) {
        const cycle = chain.slice(seen);
        if (!cycle.some((n) => inCycle.has(n))) {
          cycle.forEach((n) => inCycle.add(n));
          const first = names.find((n) => cycle.includes(n))!;
          const from = cycle.indexOf(first);
          const ordered = [...cycle.slice(from), ...cycle.slice(0, from), first];
          problem(first, 'reports_to', `reports_to forms a cycle: ${ordered.join(' → ')}`);
        }
        break;
      }
      chain.push(at);
    }
  }

  if (lead !== undefined) {
    for (const e of entries) {
      if (e.name === lead || inCycle.has(e.name) || troubled.has(e.name)) continue;
      let at: string | undefined = e.name;
      const seen = new Set<string>();
      while (at !== undefined && at !== lead && !seen.has(at)) {
        seen.add(at);
        at = parent.get(at);
      }
      const manager = parent.get(e.name) ?? e.reports_to;
      if (at !== lead && manager === undefined) {
        // A worker with no reports_to in a team of several top-level managers: which one is meant?
        problem(e.name, 'name', `worker "${e.name}" has no reports_to, and the team has more than one top-level manager; name its manager with reports_to`);
      } else if (at !== lead) {
        problem(e.name, 'name', `agent "${e.name}" cannot be reached from the lead "${lead}": it reports to "${manager}", which does not answer to the lead`);
      }
    }
  }

  if (problems.length > 0 || lead === undefined) return { problems };
  const members = new Map<string, TeamMember>(entries.map((e) => [e.name, { name: e.name, role: e.role, reportsTo: parent.get(e.name) ?? null }]));
  return { graph: { lead, members }, problems };
}

/** The agents that report directly to `manager`, in file order. */
export function reportsOf(graph: TeamGraph, manager: string): string[] {
  return [...graph.members.values()].filter((m) => m.reportsTo === manager).map((m) => m.name);
}
