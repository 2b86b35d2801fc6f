import { formatDiagnostic } from '../../workflow/diagnostic.js';
import { DEFAULT_MODEL } from '../../workflow/limits.js';
import type { Workflow } from '../../workflow/load.js';
import { EXIT } from '../../exit-codes.js';
import { loadChecked } from '../load-checked.js';

/** `conclave graph FILE`: the team as a Mermaid flowchart or as JSON. */
export async function graphCommand(file: string, options: { format: 'mermaid' | 'json' }): Promise<number> {
  const { workflow, diagnostics, unreadable } = await loadChecked(file);
  for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  if (unreadable !== undefined) process.stderr.write(`conclave: ${unreadable}\n`);
  if (!workflow) return EXIT.usage;
  process.stdout.write(options.format === 'json' ? `${JSON.stringify(graphJson(workflow), null, 2)}\n` : mermaid(workflow));
  return EXIT.ok;
}

/** How many instances a `for_each` agent has: the list's length, or the expression that gives them at run time. */
function instancesOf(forEach: unknown): number | string | null {
  if (forEach === undefined) return null;
  return Array.isArray(forEach) ? forEach.length : String(forEach);
}

export function graphJson(workflow: Workflow) {
  const { spec, graph } = workflow;
  return {
    name: spec.name,
    lead: graph.lead,
    // The shared context every agent's system prompt begins with (docs/workflow.md: sharing the prompt cache).
    context: spec.context !== undefined,
    agents: [...graph.members.values()].map((m) => {
      const agent = spec.agents[m.name]!;
      return {
        name: m.name,
        role: m.role,
        reports_to: m.reportsTo,
        description: agent.description ?? null,
        model: agent.model ?? spec.defaults?.model ?? DEFAULT_MODEL,
        tools: agent.tools ?? [],
        spawns: agent.spawns ?? [],
        for_each: instancesOf('for_each' in agent ? agent.for_each : undefined),
        batch: (agent.batch ?? spec.defaults?.batch) === true,
      };
    }),
    documents: Object.entries(spec.documents ?? {}).map(([name, d]) => ({ name, owner: d.owner, mode: d.mode ?? 'edit', write_to: d.write_to ?? null })),
    templates: Object.entries(spec.templates ?? {}).map(([name, t]) => ({
      name,
      role: t.role ?? 'worker',
      description: t.description ?? null,
      model: t.model ?? spec.defaults?.model ?? DEFAULT_MODEL,
      tools: t.tools ?? [],
      spawns: t.spawns ?? [],
    })),
  };
}

export function mermaid(workflow: Workflow): string {
  const members = [...workflow.graph.members.values()];
  const ids = new Map<string, string>();
  members.forEach((m, i) => {
    const base = `agent_${m.name.replace(/[^A-Za-z0-9_]/g, '_')}`;
    ids.set(m.name, [...ids.values()].includes(base) ? `${base}_${i}` : base);
  });
  const lines = ['flowchart TD'];
  const { spec } = workflow;
  for (const m of members) {
    const agent = spec.agents[m.name];
    const count = instancesOf(agent && 'for_each' in agent ? agent.for_each : undefined);
    const extras = [
      count === null ? '' : typeof count === 'number' ? `× ${count}` : 'for_each',
      (agent?.batch ?? spec.defaults?.batch) === true ? 'batch' : '',
    ].filter(Boolean);
    const role = m.name === workflow.graph.lead ? 'manager, the lead' : m.role;
    const title = `${m.name} (${[role, ...extras].join(', ')})`;
    const description = workflow.spec.agents[m.name]?.description;
    const label = description ? `${title}<br/>${description}` : title;
    lines.push(`  ${ids.get(m.name)}["${label.replace(/"/g, '#quot;').replace(/\n/g, ' ')}"]`);
  }
  for (const m of members) {
    if (m.reportsTo) lines.push(`  ${ids.get(m.reportsTo)} --> ${ids.get(m.name)}`);
  }
  // Templates: one node each, drawn apart (a stadium shape), with a dotted edge from each agent or template that spawns it.
  const templates = Object.entries(workflow.spec.templates ?? {});
  const templateId = (name: string) => `template_${name}`;
  for (const [name, t] of templates) {
    const label = `${name}-N (template, ${t.role ?? 'worker'})${t.description ? `<br/>${t.description}` : ''}`;
    lines.push(`  ${templateId(name)}(["${label.replace(/"/g, '#quot;').replace(/\n/g, ' ')}"])`);
  }
  const spawners: [string, string[] | undefined][] = [
    ...members.map((m) => [ids.get(m.name)!, workflow.spec.agents[m.name]?.spawns] as [string, string[] | undefined]),
    ...templates.map(([name, t]) => [templateId(name), t.spawns] as [string, string[] | undefined]),
  ];
  for (const [from, spawns] of spawners) for (const name of spawns ?? []) lines.push(`  ${from} -. spawns .-> ${templateId(name)}`);
  // Documents: one node each (a document's shape), with an edge from its owner.
  for (const [i, [name, d]] of Object.entries(spec.documents ?? {}).entries()) {
    const label = `${name} (document${d.mode === 'append' ? ', append' : ''}${d.write_to ? `, written to ${d.write_to}` : ''})`;
    lines.push(`  document_${i}[/"${label.replace(/"/g, '#quot;')}"/]`);
    const owner = ids.get(d.owner);
    if (owner) lines.push(`  ${owner} -- owns --- document_${i}`);
  }
  if (spec.context !== undefined) lines.push('  context[("context: shared by every agent, read from the prompt cache")]');
  return `${lines.join('\n')}\n`;
}
