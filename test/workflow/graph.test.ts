import { describe, expect, it } from 'vitest';
import { buildGraph, reportsOf, type AgentEntry } from '../../src/workflow/graph.js';

const graphOf = (entries: AgentEntry[]) => {
  const { graph, problems } = buildGraph(entries);
  expect(problems).toEqual([]);
  return graph!;
};

describe('the agent graph', () => {
  it('sends workers without reports_to to the single top-level manager', () => {
    const graph = graphOf([
      { name: 'a', role: 'worker' },
      { name: 'lead', role: 'manager' },
      { name: 'b', role: 'worker' },
    ]);
    expect(graph.lead).toBe('lead');
    expect(reportsOf(graph, 'lead')).toEqual(['a', 'b']);
    expect(graph.members.get('lead')!.reportsTo).toBeNull();
  });

  it('supports nested teams', () => {
    const graph = graphOf([
      { name: 'cto', role: 'manager' },
      { name: 'backend', role: 'manager', reports_to: 'cto' },
      { name: 'db', role: 'worker', reports_to: 'backend' },
      { name: 'api', role: 'worker', reports_to: 'backend' },
      { name: 'docs', role: 'worker' },
    ]);
    expect(graph.lead).toBe('cto');
    expect(reportsOf(graph, 'cto')).toEqual(['backend', 'docs']);
    expect(reportsOf(graph, 'backend')).toEqual(['db', 'api']);
  });

  it('makes the only agent of a one-agent workflow its lead, whatever its role', () => {
    expect(graphOf([{ name: 'solo', role: 'worker' }]).lead).toBe('solo');
  });

  it('reports a cycle once, starting from the agent that comes first in the file', () => {
    const { graph, problems } = buildGraph([
      { name: 'lead', role: 'manager' },
      { name: 'x', role: 'manager', reports_to: 'z' },
      { name: 'y', role: 'manager', reports_to: 'x' },
      { name: 'z', role: 'manager', reports_to: 'y' },
    ]);
    expect(graph).toBeUndefined();
    expect(problems).toEqual([{ agent: 'x', site: 'reports_to', message: 'reports_to forms a cycle: x → z → y → x' }]);
  });

  it('reports agents hanging below a second top-level manager as unreachable', () => {
    const { problems } = buildGraph([
      { name: 'lead', role: 'manager' },
      { name: 'rogue', role: 'manager' },
      { name: 'sub', role: 'manager', reports_to: 'rogue' },
      { name: 'w', role: 'worker', reports_to: 'sub' },
    ]);
    expect(problems.map((p) => [p.agent, p.site])).toEqual([
      ['rogue', 'name'],
      ['sub', 'name'],
      ['w', 'name'],
    ]);
  });
});
