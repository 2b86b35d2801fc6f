import { buildGraph, type AgentEntry, type TeamGraph } from '../../src/workflow/graph.js';

/** A team: `lead` manages `a`, `b`, `c`; `sub` is a manager under lead with worker `d`. */
export function team(entries: AgentEntry[] = DEFAULT): TeamGraph {
  const { graph, problems } = buildGraph(entries);
  if (!graph) throw new Error(problems.map((p) => p.message).join('; '));
  return graph;
}

const DEFAULT: AgentEntry[] = [
  { name: 'lead', role: 'manager' },
  { name: 'a', role: 'worker' },
  { name: 'b', role: 'worker' },
  { name: 'c', role: 'worker' },
  { name: 'sub', role: 'manager', reports_to: 'lead' },
  { name: 'd', role: 'worker', reports_to: 'sub' },
];
