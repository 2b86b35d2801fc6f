import type { AgentProfile } from '../../agents/profile.js';
import { FULL_ROSTER_UP_TO, systemPrompt, type TeamEntry } from '../../agents/preamble.js';
import { rosterTool } from '../../agents/tools/roster.js';
import type { AgentTool } from '../../agents/tools/tool.js';
import type { McpToolbox } from '../../agents/tools/mcp.js';
import { WORKSPACE_TOOL_BY_NAME } from '../../agents/tools/workspace-tools.js';
import type { Scope } from '../../workflow/evaluate.js';
import type { ExpandedTeam } from './for-each.js';
import { fillTemplate } from '../../workflow/fill.js';
import { UNTRUSTED_NOTE, type TrustPolicy } from '../trust/trust.js';
import { defaultMaxTokens, modelInfo } from '../../provider/models.js';
import { DEFAULT_MODEL } from '../../workflow/limits.js';
import type { Workflow } from '../../workflow/load.js';
import type { AgentSpec, CacheTtl, ModelSettings, TemplateSpec, WorkspaceTool } from '../../workflow/types.js';
import type { LocatedTemplate } from '../../workflow/load.js';
import { coordinationTools, type ToolSources } from './team-tools.js';
import type { ProviderName } from '../../provider/clouds.js';
import type { ThinkingConfigParam } from '@anthropic-ai/sdk/resources/messages';

/** What a profile is built from, besides the agent's own entry. */
export interface ProfileSources extends ToolSources {
  workflow: Workflow;
  scope: Scope;
  modelOverride?: string;
  /** --batch: every agent batched. */
  batchOverride?: boolean;
  providerOverride?: ProviderName;
  mcp?: McpToolbox;
  /** The workflow's `context:`, interpolated once after setup. */
  context?: string;
  /** How long the prompt cache keeps the run's writes: the workflow's `cache.ttl`, or the run's choice (cache-warming.ts). */
  cacheTtl?: CacheTtl;
  /** Where text comes from: untrusted values are fenced, and the agents whose prompts hold them known (trust.ts). */
  trust?: TrustPolicy;
  /** The untrusted sources `context` holds. */
  contextSources?: string[];
}

/**
 * A prompt's template filled: untrusted values fenced when the run has a trust policy; the
 * untrusted sources it holds. `item`: the untrusted source of a `for_each` instance's item.
 */
function fillPrompt(sources: Pick<ProfileSources, 'trust'>, template: LocatedTemplate, scope: Scope, item?: string): { text: string; sources: string[] } {
  return sources.trust ? sources.trust.fill(template, scope, item) : { text: fillTemplate(template, scope), sources: [] };
}

/**
 * Every agent's profile, in file order, with its prompts interpolated from `scope`: an agent with
 * `for_each` gives one profile per instance, whose prompts also read `item` and `item_index`.
 */
export function buildProfiles(sources: ProfileSources, expanded: ExpandedTeam): AgentProfile[] {
  const { workflow, scope } = sources;
  const { spec } = workflow;
  const { graph, instances } = expanded;
  const declaredOf = (name: string) => instances.get(name)?.agent ?? name;
  const scopeOf = (name: string): Scope => {
    const instance = instances.get(name);
    return instance ? { ...scope, item: instance.item, item_index: instance.index } : scope;
  };
  const itemSourceOf = (name: string) => (instances.has(name) ? sources.trust?.itemSourceOf(workflow, declaredOf(name)) : undefined);
  const described = new Map<string, string[]>();
  const team: TeamEntry[] = [...graph.members.values()].map((m) => {
    const description = workflow.templates.get(`agents.${declaredOf(m.name)}.description`);
    const filled = description ? fillPrompt(sources, description, scopeOf(m.name), itemSourceOf(m.name)) : { text: '', sources: [] };
    described.set(m.name, filled.sources);
    return { name: m.name, role: m.role, isLead: m.name === graph.lead, reportsTo: m.reportsTo, description: filled.text };
  });
  const roster = team.length > FULL_ROSTER_UP_TO ? [rosterTool(team)] : [];
  // Every agent reads the team's descriptions (its preamble's roster, or team_roster): an untrusted one reaches them all.
  const rosterSources = [...new Set([...described.values()].flat())];
  return team.map((entry) => {
    const declared = declaredOf(entry.name);
    const own = { ...sources, scope: scopeOf(entry.name), item: itemSourceOf(entry.name) };
    return profileOf(own, entry, spec.agents[declared]!, workflow.system[declared], team, roster, rosterSources);
  });
}

function documentsOf(spec: Workflow['spec']) {
  return Object.entries(spec.documents ?? {}).map(([name, d]) => ({ name, owner: d.owner, mode: d.mode ?? ('edit' as const) }));
}

/** The workflow's `context:`, interpolated once for the whole team (empty text is no context), and the untrusted sources it holds. */
export function teamContext(workflow: Workflow, scope: Scope, trust?: TrustPolicy): { context?: string; contextSources?: string[] } {
  const template = workflow.templates.get('context');
  const { text: context, sources } = template ? fillPrompt({ trust }, template, scope) : { text: '', sources: [] };
  return context.trim() === '' ? {} : { context, ...(sources.length ? { contextSources: sources } : {}) };
}

/** The profile of `name`, an instance of `template` spawned by `parent`: the template's settings, and the declared team as its roster. */
export function instanceProfile(sources: ProfileSources, template: string, name: string, parent: string): AgentProfile {
  const { workflow, scope } = sources;
  const spec = workflow.spec.templates![template]!;
  const description = workflow.templates.get(`templates.${template}.description`);
  const filled = description ? fillPrompt(sources, description, scope) : { text: '', sources: [] };
  const entry: TeamEntry = { name, role: spec.role ?? 'worker', isLead: false, reportsTo: parent, description: filled.text };
  const team = [...workflow.graph.members.values()].map((m) => ({
    name: m.name,
    role: m.role,
    isLead: m.name === workflow.graph.lead,
    reportsTo: m.reportsTo,
    description: '',
  }));
  return profileOf(
    sources,
    entry,
    { ...spec, wake: 'all' as const },
    workflow.templates.get(`templates.${template}.system`),
    [...team, entry],
    [],
    filled.sources,
  );
}

function profileOf(
  sources: ProfileSources & { item?: string },
  entry: TeamEntry,
  agent: AgentSpec | TemplateSpec,
  system: LocatedTemplate | undefined,
  team: TeamEntry[],
  roster: AgentTool[],
  describedFrom: readonly string[] = [],
): AgentProfile {
  const {
    workflow: { spec },
    scope,
    modelOverride,
    providerOverride,
    mcp,
  } = sources;
  const own = (agent.tools ?? []).flatMap((t) => (t in WORKSPACE_TOOL_BY_NAME ? [WORKSPACE_TOOL_BY_NAME[t as WorkspaceTool]] : (mcp?.toolsFor(t) ?? [])));
  const tools = [...coordinationTools(sources, entry.isLead, agent, roster), ...own];
  const settings: ModelSettings = { ...spec.defaults, ...definedOf(agent) };
  const instructions = system ? fillPrompt(sources, system, scope, sources.item) : { text: '', sources: [] };
  const untrusted = [...new Set([...(sources.contextSources ?? []), ...instructions.sources, ...describedFrom])];
  const model = modelOverride ?? settings.model ?? DEFAULT_MODEL;
  return {
    ...entry,
    provider: providerOverride ?? settings.provider ?? spec.provider ?? 'anthropic',
    model,
    maxTokens: settings.max_tokens ?? defaultMaxTokens(model),
    ...(settings.effort ? { effort: settings.effort } : {}),
    ...thinkingOf(settings, model),
    wake: ('wake' in agent ? agent.wake : undefined) ?? (entry.role === 'manager' ? 'all' : 'each'),
    queue: agent.queue ?? 'collect',
    ...contextOf(settings, model),
    tools,
    ...(sources.teamTools ? { offered: [...sources.teamTools, ...own] } : {}),
    system: systemPrompt(
      {
        workflow: spec,
        agent: entry,
        team,
        toolNames: tools.map((t) => t.definition.name),
        instructions: instructions.text,
        ...(spec.documents ? { documents: documentsOf(spec) } : {}),
        ...(sources.trust?.active ? { untrustedNote: UNTRUSTED_NOTE } : {}),
        ...(spec.people ? { people: { voters: spec.people.voters, decide: spec.people.decide ?? [] } } : {}),
      },
      sources.context,
    ),
    cacheTtl: sources.cacheTtl ?? spec.cache?.ttl ?? '5m',
    batch: sources.batchOverride === true || settings.batch === true,
    ...(settings.fallbacks ? { fallbacks: settings.fallbacks } : {}),
    ...(settings.task_budget ? { taskBudget: settings.task_budget } : {}),
    ...(settings.speed === 'fast' ? { speed: 'fast' as const } : {}),
    ...(untrusted.length ? { untrusted } : {}),
  };
}

/** The agent's own model settings that it sets (the others come from `defaults`). */
function definedOf(agent: ModelSettings): ModelSettings {
  const { provider, model, max_tokens, effort, thinking, thinking_display, compact_at, batch, fallbacks, task_budget, speed } = agent;
  return Object.fromEntries(
    Object.entries({ provider, model, max_tokens, effort, thinking, thinking_display, compact_at, batch, fallbacks, task_budget, speed }).filter(
      ([, v]) => v !== undefined,
    ),
  );
}

/** The most tokens a conversation keeps by default: every token kept is paid again on every call. */
export const DEFAULT_COMPACT_AT = 150_000;

/** Where the agent's conversation is compacted, and its turns' tool output budget (a quarter of that). */
function contextOf(settings: ModelSettings, model: string): { compactAt: number; turnOutputBudget: number } {
  const compactAt = settings.compact_at ?? Math.min(DEFAULT_COMPACT_AT, Math.floor(modelInfo(model).window * 0.75));
  return { compactAt, turnOutputBudget: Math.floor(compactAt / 4) };
}

/** The `thinking` parameter as the Messages API expects it, or nothing: the model's default. */
function thinkingOf(settings: ModelSettings, model: string): { thinking?: ThinkingConfigParam } {
  const display = settings.thinking_display ? { display: settings.thinking_display } : {};
  const { thinking } = settings;
  if (thinking === 'off') return { thinking: { type: 'disabled' } };
  if (typeof thinking === 'number') return { thinking: { type: 'enabled', budget_tokens: thinking, ...display } };
  if (thinking === 'adaptive' || (settings.thinking_display && modelInfo(model).thinking === 'adaptive')) {
    return { thinking: { type: 'adaptive', ...display } };
  }
  return {};
}
