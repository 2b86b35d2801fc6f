import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { estimatedTeam, estimateScope, estimateWorkflow } from '../../src/engine/estimate/workflow-estimate.js';
import { loadWorkflow, type Workflow } from '../../src/workflow/load.js';

/** A workflow's estimate before its run (engine/estimate/workflow-estimate.ts): its scope without setup, the team the run would assemble, priced. */

async function workflowOf(text: string): Promise<Workflow> {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-workflow-estimate-'));
  writeFileSync(join(dir, 'w.yml'), text);
  const { workflow, diagnostics } = await loadWorkflow(join(dir, 'w.yml'));
  if (!workflow) throw new Error(JSON.stringify(diagnostics));
  return workflow;
}

const FILES = `name: files
inputs:
  topic: { type: string }
setup:
  - { id: files, run: "exit 1" }
  - { id: base, run: "exit 1" }
agents:
  lead: { role: manager, model: claude-opus-5, spawns: [helper] }
  reviewer:
    role: worker
    for_each: $<< lines(setup.files) >>
    system: Review $<< item >> for $<< inputs.topic >> against $<< setup.base >>.
  fixed:
    role: worker
    for_each: [a, b]
  listed:
    role: worker
    for_each: ["setup.files"]
templates:
  helper: { model: claude-haiku-4-5, limits: { max_turns: 2, budget_usd: 0.25 } }
kickoff: Look at $<< inputs.topic >>.
`;
const none = { workspace: tmpdir(), providers: [], warn: () => {} };

describe("a workflow's estimate", () => {
  it('without setup: each step empty, or as the first earlier session recorded it; a for_each over unknown setup output is one stand-in, per item', async () => {
    const workflow = await workflowOf(FILES);
    const fresh = await estimateScope({ workflow, inputs: { topic: 'sql' }, setup: false, ...none });
    expect(fresh.scope.setup).toEqual({ files: '', base: '' });
    expect(fresh.scope.inputs).toEqual({ topic: 'sql' });
    expect(fresh.scope.run).toEqual({ id: 'estimate', session: '' });
    expect(fresh.scope.env).toEqual({});
    expect(fresh.scope.github).toEqual({});
    expect([...fresh.perItem]).toEqual(['reviewer']);
    expect(fresh.forEachWorkflow.spec.agents.reviewer!.for_each).toEqual(['(an item)']);
    expect(fresh.forEachWorkflow.spec.agents.fixed!.for_each).toEqual(['a', 'b']);
    // A list that only names setup is a list: its item is that text, known now.
    expect(fresh.forEachWorkflow.spec.agents.listed!.for_each).toEqual(['setup.files']);
    expect(workflow.spec.agents.reviewer!.for_each).toBe('$<< lines(setup.files) >>');
    expect(fresh.mcp).toBeUndefined();

    const recorded = await estimateScope({ workflow, inputs: { topic: 'sql' }, setup: false, ...none }, { files: 'x.ts\ny.ts' });
    expect(recorded.scope.setup).toEqual({ files: 'x.ts\ny.ts', base: '' });
    expect(recorded.perItem.size).toBe(0);
    expect(recorded.forEachWorkflow.spec.agents.reviewer!.for_each).toBe('$<< lines(setup.files) >>');
  });

  it('with setup: its steps run as a run runs them, their output the scope; every for_each known', async () => {
    const workflow = await workflowOf(
      FILES.replace('run: "exit 1" }\n  - { id: base, run: "exit 1" }', 'run: "printf \'x.ts\\ny.ts\'" }\n  - { id: base, run: "echo main" }'),
    );
    const warned: string[] = [];
    const done = await estimateScope({ workflow, inputs: { topic: 'sql' }, setup: true, workspace: tmpdir(), providers: [], warn: (m) => warned.push(m) });
    expect(done.scope.setup).toEqual({ files: 'x.ts\ny.ts', base: 'main' });
    expect(done.scope.run).toEqual({ id: 'estimate', session: '' });
    expect(done.perItem.size).toBe(0);
    expect(done.forEachWorkflow).toBe(workflow);
    expect(done.mcp).toBeUndefined();
    expect(warned).toEqual([]);
  });

  it('the team as the run assembles it: each group, a stand-in per unknown for_each, a template spawned once by its spawner', async () => {
    const workflow = await workflowOf(FILES);
    const { scope, perItem, forEachWorkflow } = await estimateScope({ workflow, inputs: { topic: 'sql' }, setup: false, ...none });
    const team = estimatedTeam({ workflow, forEachWorkflow, scope, overrides: {}, perItem });
    expect(team.cacheTtl).toBe('5m');
    expect(team.groups.map((g) => [g.name, g.kind, g.profiles.map((p) => p.name)])).toEqual([
      ['lead', 'agent', ['lead']],
      ['reviewer', 'for_each', ['reviewer-1']],
      ['fixed', 'for_each', ['fixed-1', 'fixed-2']],
      ['listed', 'for_each', ['listed-1']],
      ['helper', 'template', ['helper-1']],
    ]);
    const reviewer = team.groups[1]!;
    expect(reviewer).toMatchObject({ perItem: true, atMost: workflow.maxAgents });
    expect(team.groups[2]!.perItem).toBeUndefined();
    expect(team.groups[4]).toMatchObject({ maxTurns: 2, budgetUsd: 0.25 });
    expect(reviewer.profiles[0]!.system.join('\n')).toContain('Review (an item) for sql against .');
    // The run's overrides reach every profile.
    const overridden = estimatedTeam({
      workflow,
      forEachWorkflow,
      scope,
      overrides: { modelOverride: 'claude-sonnet-5-5', providerOverride: 'vertex', batchOverride: true },
      perItem,
    });
    for (const g of overridden.groups) for (const p of g.profiles) expect([p.model, p.provider, p.batch]).toEqual(['claude-sonnet-5-5', 'vertex', true]);
    const plain = estimatedTeam({ workflow, forEachWorkflow, scope, overrides: {}, perItem });
    for (const g of plain.groups) for (const p of g.profiles) expect([p.provider, p.batch]).toEqual(['anthropic', false]);
    expect(plain.groups[4]!.profiles[0]!.model).toBe('claude-haiku-4-5');
  });

  it("priced: each agent's first request counted once, at its model's price; a workflow's pricing: taken as given", async () => {
    const workflow = await workflowOf(FILES.replace('name: files', 'name: files\npricing: { claude-opus-5: { input: 1000, output: 1000 } }'));
    const counted: string[] = [];
    const estimate = await estimateWorkflow({
      workflow,
      inputs: { topic: 'sql' },
      setup: false,
      workspace: tmpdir(),
      overrides: {},
      providers: ['anthropic'],
      history: [],
      count: async (request) => {
        counted.push(String(request.model));
        return 1_000;
      },
      warn: () => {},
    });
    expect(counted.sort()).toEqual(
      ['claude-haiku-4-5', 'claude-opus-5', 'claude-sonnet-5-5', 'claude-sonnet-5-5', 'claude-sonnet-5-5', 'claude-sonnet-5-5'].sort(),
    );
    const lead = estimate.agents.find((a) => a.name === 'lead')!;
    const helper = estimate.agents.find((a) => a.name === 'helper')!;
    // The lead's model at $1,000 a million: its likely cost dwarfs the haiku helper's.
    expect(lead.likely_usd).toBeGreaterThan(100 * helper.likely_usd);
    expect(lead.counted).toBe('exact');
    expect(estimate.worst_usd).toBeLessThanOrEqual(workflow.limits.budgetUsd);
  });
});
