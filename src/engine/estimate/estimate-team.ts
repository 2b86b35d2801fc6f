import type { AgentProfile } from '../../agents/profile.js';
import { fillTemplate } from '../../workflow/fill.js';
import type { Scope } from '../../workflow/evaluate.js';
import type { Workflow } from '../../workflow/load.js';
import type { ExpandedTeam } from '../teams/for-each.js';
import { buildProfiles, instanceProfile, type ProfileSources } from '../teams/profiles.js';
import type { EstimateGroup } from './estimate-likely.js';

/**
 * The team as an estimate shows it (estimate.ts): each declared agent, each `for_each` with its
 * instances (`perItem`: the items are unknown, one stand-in instance), each template with one
 * stand-in instance, spawned by the first agent that may spawn it.
 */
export function estimateGroups(sources: ProfileSources, expanded: ExpandedTeam, perItem: ReadonlySet<string> = new Set()): EstimateGroup[] {
  const { workflow } = sources;
  const { spec } = workflow;
  const byName = new Map(buildProfiles(sources, expanded).map((p) => [p.name, p]));
  const groups: EstimateGroup[] = [...workflow.graph.members.keys()].map((name) => {
    const instances = expanded.graph.groups?.get(name);
    if (instances === undefined) return { name, kind: 'agent', profiles: [byName.get(name)!] };
    return {
      name,
      kind: 'for_each',
      profiles: instances.map((i) => byName.get(i)!),
      ...(perItem.has(name) ? { perItem: true, atMost: workflow.maxAgents } : {}),
    };
  });
  const room = Math.max(0, workflow.maxAgents - byName.size);
  for (const [template, t] of Object.entries(spec.templates ?? {})) {
    const parent = Object.entries(spec.agents).find(([, a]) => a.spawns?.includes(template))?.[0] ?? workflow.graph.lead;
    groups.push({
      name: template,
      kind: 'template',
      profiles: [instanceProfile(sources, template, `${template}-1`, parent)],
      atMost: room,
      ...(t.limits?.max_turns === undefined ? {} : { maxTurns: t.limits.max_turns }),
      ...(t.limits?.budget_usd === undefined ? {} : { budgetUsd: t.limits.budget_usd }),
    });
  }
  return groups;
}

/** The first message an agent's first turn reads: the kickoff for the lead, a task from its manager for the others. */
export function firstMessageOf(workflow: Workflow, scope: Scope): (profile: AgentProfile) => string {
  const kickoff = `[from kickoff]\n${fillTemplate(workflow.templates.get('kickoff')!, scope)}`;
  return (profile) => (profile.isLead ? kickoff : `[from @${profile.reportsTo ?? workflow.graph.lead}]\nYour task.`);
}
