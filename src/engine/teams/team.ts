import type { AgentProfile } from '../../agents/profile.js';
import type { McpToolbox } from '../../agents/tools/mcp.js';
import { Channel, type ProposalView } from '../../channel/channel.js';
import type { ChannelEvent } from '../../channel/channel-events.js';
import type { Scope } from '../../workflow/evaluate.js';
import type { Workflow } from '../../workflow/load.js';
import type { PeopleSpec } from '../../workflow/types.js';
import type { PromptLayout } from '../prompt-cache/prompt-layout.js';
import { withTeamTools } from './team-tools.js';
import type { PeoplePolicy } from '../../channel/proposal.js';
import { durationMs } from '../../workflow/limits.js';
import type { TrustPolicy } from '../trust/trust.js';
import { contextTooShort } from '../prompt-cache/cache-warming.js';
import { FanIn } from './fan-in.js';
import { expandTeam, type ExpandedTeam } from './for-each.js';
import { buildProfiles, teamContext, type ProfileSources } from './profiles.js';
import { editReminders, type Reminders, voteReminders } from '../reminders.js';
import type { RunOptions } from '../run-options.js';
import { Spawner, type SpawnerHooks } from './spawner.js';

/** What the team is made of once setup has run: the channel they talk on, who may spawn, and who waits for whom. */
export interface Team {
  channel: Channel;
  spawner: Spawner;
  fanIn: FanIn;
  /** Votes first, then reviews of edits: what members still owe when nothing else runs. */
  reminders: Reminders<unknown>[];
  /** What the profiles were made from, and the team with its for_each expanded: an estimate before the run reads them (estimate-gate.ts). */
  sources: ProfileSources;
  expanded: ExpandedTeam;
}

/** What the scheduler lends the team: its agents' table and turns. */
export interface TeamHosts extends SpawnerHooks {
  running: ReadonlySet<string>;
  profiles: ReadonlyMap<string, AgentProfile>;
  hasTurnsLeft(name: string): boolean;
  onChannelEvent(event: ChannelEvent): void;
  /** A proposal closed as its reminders lapsed. */
  onProposalClosed(proposal: ProposalView): void;
  warn(message: string): void;
}

/**
 * The team as the workflow declares it, its `for_each` expanded against the scope setup made
 * (docs/workflow.md: agents, for_each, templates): each agent registered with its profile, the
 * channel, the spawner of run-time agents, and fan-in. Warns when `context:` is too short to be
 * cached (a live run only: a replay said so when it ran).
 */
export function assembleTeam(
  options: Pick<RunOptions, 'workflow' | 'answers' | 'recording'>,
  scope: Scope,
  mcp: McpToolbox | undefined,
  layout: PromptLayout,
  trust: TrustPolicy,
  hosts: TeamHosts,
): Team {
  const { workflow } = options;
  const people = peoplePolicy(workflow.spec.people);
  const { sources, expanded: team } = teamSources({ workflow, scope, overrides: options.answers, mcp, layout, trust });
  const profiles = buildProfiles(sources, team);
  for (const profile of profiles) hosts.register(profile);
  const short = sources.context === undefined || options.recording.journal.replaying ? undefined : contextTooShort(sources.context, profiles);
  if (short) hosts.warn(short);
  const channel = new Channel(team.graph, (event) => hosts.onChannelEvent(event), people);
  const spawner = new Spawner(sources, channel, hosts.profiles.size, hosts);
  const fanIn = new FanIn({ channel, spawner, profiles: hosts.profiles, running: hosts.running, hasTurnsLeft: (n) => hosts.hasTurnsLeft(n) });
  const reminders = [voteReminders(channel, (p) => hosts.onProposalClosed(p)), editReminders(channel)];
  return { channel, spawner, fanIn, reminders, sources, expanded: team };
}

/** What a team's profiles are made from besides the workflow and the scope: --model, --provider, --batch. */
export type TeamOverrides = Pick<ProfileSources, 'modelOverride' | 'providerOverride' | 'batchOverride'>;

/**
 * What every profile of the team is made from, and the team with its `for_each` expanded: the
 * run's team (assembleTeam) and the team an estimate prices (estimate/workflow-estimate.ts) are made here
 * alike, so that the estimate's first requests are the run's.
 */
export function teamSources(given: {
  workflow: Workflow;
  scope: Scope;
  overrides: TeamOverrides;
  mcp: McpToolbox | undefined;
  layout: PromptLayout;
  trust?: TrustPolicy;
}): { sources: ProfileSources; expanded: ExpandedTeam } {
  const { workflow, scope, overrides, mcp, layout, trust } = given;
  const expanded = expandTeam(workflow, scope);
  const sources: ProfileSources = {
    workflow,
    scope,
    ...(overrides.modelOverride ? { modelOverride: overrides.modelOverride } : {}),
    ...(overrides.batchOverride ? { batchOverride: true } : {}),
    ...(overrides.providerOverride ? { providerOverride: overrides.providerOverride } : {}),
    ...(mcp ? { mcp } : {}),
    cacheTtl: layout.cacheTtl,
    ...(trust ? { trust } : {}),
    ...teamContext(workflow, scope, trust),
  };
  return { sources: withTeamTools(sources, expanded, layout.sharedTools), expanded };
}

/** How long a proposal waits for people when the workflow does not say (people.deadline). */
const PEOPLE_DEADLINE = '24h';

function peoplePolicy(people: PeopleSpec | undefined): PeoplePolicy | undefined {
  return people && { voters: people.voters, rule: people.rule, deadlineMs: durationMs(people.deadline ?? PEOPLE_DEADLINE), decide: people.decide ?? [] };
}
