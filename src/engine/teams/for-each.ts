import { ConclaveError } from '../../conclave-error.js';
import type { Scope } from '../../workflow/evaluate.js';
import { evaluate } from '../../workflow/evaluate.js';
import type { Workflow } from '../../workflow/load.js';
import type { TeamGraph, TeamMember } from '../../workflow/graph.js';
import { instanceName } from '../../workflow/spawn-checks.js';

/** One instance of an agent with `for_each`: the agent it comes from, its item and the item's index (from 0). */
export interface ForEachInstance {
  agent: string;
  item: unknown;
  index: number;
}

/** The team as the run has it: each agent with `for_each` replaced by its instances, and `@NAME` standing for all of them. */
export interface ExpandedTeam {
  graph: TeamGraph;
  instances: ReadonlyMap<string, ForEachInstance>;
}

/** for_each's list cannot be made: not a list, or more agents than limits.max_agents. */
export class ForEachError extends ConclaveError {}

/**
 * Expands `for_each:` once setup has run (docs/workflow.md: for_each): a list written in the
 * file, or the list one expression gives (`lines(setup.files)`, `from_json(inputs.targets)`).
 * The instances are `NAME-1` … `NAME-N`, in the list's order, each reporting to NAME's manager.
 */
export function expandTeam(workflow: Workflow, scope: Scope): ExpandedTeam {
  const { spec, graph } = workflow;
  const members = new Map<string, TeamMember>();
  const groups = new Map<string, string[]>();
  const instances = new Map<string, ForEachInstance>();
  for (const member of graph.members.values()) {
    const forEach = spec.agents[member.name]?.for_each;
    if (forEach === undefined) {
      members.set(member.name, member);
      continue;
    }
    const items = itemsOf(member.name, forEach, workflow, scope);
    const names = items.map((item, index) => {
      const name = instanceName(member.name, index + 1);
      members.set(name, { name, role: 'worker', reportsTo: member.reportsTo });
      instances.set(name, { agent: member.name, item, index });
      return name;
    });
    groups.set(member.name, names);
  }
  const maxAgents = workflow.maxAgents;
  if (members.size > maxAgents) {
    throw new ForEachError(
      `for_each gives the team ${members.size} agents; limits.max_agents is ${maxAgents} (raise it in the workflow, or give for_each a shorter list)`,
    );
  }
  return { graph: { lead: graph.lead, members, groups }, instances };
}

function itemsOf(agent: string, forEach: unknown[] | string, workflow: Workflow, scope: Scope): unknown[] {
  if (Array.isArray(forEach)) return forEach;
  const template = workflow.templates.get(`agents.${agent}.for_each`)!;
  const expr = template.parts.find((p) => p.kind === 'expr');
  const value = expr?.kind === 'expr' ? evaluate(expr.expr, scope) : undefined;
  if (!Array.isArray(value)) {
    const found = value === null ? 'null' : typeof value === 'string' ? `the text ${JSON.stringify(value.slice(0, 60))}` : typeof value;
    throw new ForEachError(`agents.${agent}.for_each must give a list; ${template.text.trim()} gave ${found} (lines(…) makes a list of a text's lines)`);
  }
  return value;
}
