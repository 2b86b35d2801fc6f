import type { AgentTool } from '../../agents/tools/tool.js';
import { cancelProposal, channelHistory, completeTool, propose, proposeWithConsent, vote } from '../../agents/tools/coordination.js';
import { DOCUMENT_TOOLS } from '../../agents/tools/documents.js';
import { rosterTool } from '../../agents/tools/roster.js';
import { cancelTool, forkTool, spawnTool } from '../../agents/tools/spawn.js';
import { FULL_ROSTER_UP_TO } from '../../agents/preamble.js';
import { typedOutputs } from '../../workflow/typed-outputs.js';
import type { Workflow } from '../../workflow/load.js';
import type { AgentSpec, TemplateSpec } from '../../workflow/types.js';
import type { ExpandedTeam } from './for-each.js';
import type { TrustPolicy } from '../trust/trust.js';

/** What an agent's coordination tools depend on (a part of engine/teams/profiles.ts's ProfileSources). */
export interface ToolSources {
  workflow: Workflow;
  trust?: TrustPolicy;
  /** With a `context:`: the team's coordination tools, the list every agent's requests are sent. */
  teamTools?: readonly AgentTool[];
  context?: string;
}

/**
 * The tools an agent has for working with the team, in the one order every list keeps: proposals
 * and the channel, the documents, the roster of a large team, spawning, and `complete` for the lead.
 */
export function coordinationTools(
  sources: ToolSources,
  isLead: boolean,
  agent: Pick<AgentSpec | TemplateSpec, 'spawns' | 'fork'>,
  roster: readonly AgentTool[],
): AgentTool[] {
  const { spec } = sources.workflow;
  const spawns = (agent.spawns?.length ?? 0) > 0;
  return [
    sources.trust?.active ? proposeWithConsent : propose,
    vote,
    cancelProposal,
    channelHistory,
    ...(spec.documents ? DOCUMENT_TOOLS : []),
    ...roster,
    ...(spawns ? [spawnTool] : []),
    ...(agent.fork ? [forkTool] : []),
    ...(spawns || agent.fork ? [cancelTool] : []),
    ...(isLead ? [completeTool(typedOutputs(spec), spec.people?.decide)] : []),
  ];
}

/**
 * One prefix for the whole team (docs/pricing.md): tools come first in a prompt, so agents given
 * different tools cannot read one another's cached `context:`. With a context and `share` (a run
 * that records `shared_tools`), every agent's requests are sent the same coordination tools —
 * those any agent or template of the workflow has — followed by its own workspace and MCP tools;
 * it may call only its own (agents/turn.ts refuses the others). The list is built once, so every
 * profile sends the same objects (agents/request.ts), and a spawned agent's too.
 */
export function withTeamTools<S extends ToolSources>(sources: S, expanded: ExpandedTeam, share: boolean): S {
  if (!share || sources.context === undefined) return sources;
  const { spec } = sources.workflow;
  const everyone = [...Object.values(spec.agents), ...Object.values(spec.templates ?? {})];
  const union = {
    spawns: everyone.some((a) => (a.spawns?.length ?? 0) > 0) ? ['any'] : [],
    fork: everyone.some((a) => a.fork === true),
  };
  const members = [...expanded.graph.members.values()];
  // Only its definition is sent, which says the team's size: each agent's own roster is what runs.
  // Stryker disable next-line ObjectLiteral,BooleanLiteral,StringLiteral,ArrowFunction: the entries are never read
  const entries = members.map((m) => ({ ...m, isLead: false, description: '' }));
  const roster = members.length > FULL_ROSTER_UP_TO ? [rosterTool(entries)] : [];
  return { ...sources, teamTools: coordinationTools(sources, true, union, roster) };
}
