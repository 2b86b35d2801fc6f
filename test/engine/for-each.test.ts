import { describe, expect, it } from 'vitest';
import { expandTeam, ForEachError } from '../../src/engine/teams/for-each.js';
import { workflowOf } from '../helpers/workflow-of.js';

const TEAM = (forEach: string, limits = '') => `
name: each
${limits}
inputs:
  targets: { type: string, default: '[]' }
agents:
  lead: { role: manager }
  checker: { role: worker, for_each: ${forEach} }
  writer: { role: worker }
kickoff: Check.
`;

describe('for_each, expanded once setup has run', () => {
  it("makes NAME-1 … NAME-N in the list's order, each a worker reporting to the manager, and @NAME stands for all of them", async () => {
    const { graph, instances } = expandTeam(await workflowOf(TEAM('[a.ts, b.ts, c.ts]')), {});
    expect([...graph.members.keys()]).toEqual(['lead', 'checker-1', 'checker-2', 'checker-3', 'writer']);
    expect(graph.members.get('checker-2')).toEqual({ name: 'checker-2', role: 'worker', reportsTo: 'lead' });
    expect(graph.groups.get('checker')).toEqual(['checker-1', 'checker-2', 'checker-3']);
    expect(instances.get('checker-3')).toEqual({ agent: 'checker', item: 'c.ts', index: 2 });
    expect(instances.has('writer')).toBe(false);
    expect(graph.lead).toBe('lead');
  });

  it('takes the list one expression gives, and names what it gave when it is no list', async () => {
    const workflow = await workflowOf(TEAM("'$<< from_json(inputs.targets) >>'"));
    const { instances } = expandTeam(workflow, { inputs: { targets: '[{"path": "x"}, 2]' } });
    expect([...instances.values()].map((i) => i.item)).toEqual([{ path: 'x' }, 2]);
    expect(expandTeam(workflow, { inputs: { targets: '[]' } }).graph.groups.get('checker'), 'an empty list: no instance').toEqual([]);
    const refused = (targets: string) => () => expandTeam(workflow, { inputs: { targets } });
    expect(refused('{"a": 1}')).toThrow(ForEachError);
    expect(refused('{"a": 1}')).toThrow(
      /^agents\.checker\.for_each must give a list; \$<< from_json\(inputs\.targets\) >> gave object \(lines\(…\) makes a list/,
    );
    expect(refused('null')).toThrow(/ gave null /);
    expect(refused('"one two"')).toThrow(/ gave the text "one two" /);
    expect(refused(`"${'x'.repeat(100)}"`)).toThrow(new RegExp(` gave the text "${'x'.repeat(60)}" `));
    // Spaces around the one expression: the expression is what is evaluated, and named without them.
    const spaced = await workflowOf(TEAM("'  $<< from_json(inputs.targets) >>  '"));
    expect(expandTeam(spaced, { inputs: { targets: '["a"]' } }).graph.groups.get('checker')).toEqual(['checker-1']);
    expect(() => expandTeam(spaced, { inputs: { targets: '7' } })).toThrow(/for_each must give a list; \$<< from_json\(inputs\.targets\) >> gave number \(/);
  });

  it('allows a team of exactly limits.max_agents, and refuses one more, saying how many and what to do', async () => {
    const limits = 'limits: { max_agents: 5 }';
    expect(expandTeam(await workflowOf(TEAM('[a, b, c]', limits)), {}).graph.members.size).toBe(5);
    const tooMany = await workflowOf(TEAM('[a, b, c, d]', limits));
    expect(() => expandTeam(tooMany, {})).toThrow(
      'for_each gives the team 6 agents; limits.max_agents is 5 (raise it in the workflow, or give for_each a shorter list)',
    );
  });
});
