import type { AgentProfile } from '../agents/profile.js';
import { ToolInputError } from '../agents/tools/tool.js';
import type { Channel } from '../channel/channel.js';
import { DEFAULT_MAX_AGENTS, DEFAULT_MAX_DEPTH } from '../workflow/limits.js';
import { instanceName } from '../workflow/spawn-checks.js';
import { instanceProfile, type ProfileSources } from './profiles.js';

interface Spawned {
  template: string;
  parent: string;
  depth: number;
}

/**
 * Agents started at run time (docs/workflow.md: templates). An instance of a template is named
 * `TEMPLATE-N`, reports to the agent that spawned it, and gets its task as its first message;
 * `limits.max_agents` bounds the whole team and `limits.max_depth` how deep spawns nest. Names
 * are given in the order spawns happen, so a resume, which runs them again, gives the same ones.
 */
export class Spawner {
  private readonly spawned = new Map<string, Spawned>();
  private readonly children = new Map<string, string[]>();
  private readonly counts = new Map<string, number>();
  private agents: number;

  constructor(
    private readonly sources: ProfileSources,
    private readonly channel: Channel,
    declared: number,
    private readonly register: (profile: AgentProfile) => void,
  ) {
    this.agents = declared;
  }

  /** Starts one instance of `template` per task under `parent`; a refusal is a tool error naming the limit. */
  spawn(parent: string, template: string, tasks: readonly string[]): string[] {
    const { spec } = this.sources.workflow;
    const allowed = this.spawnsOf(parent);
    if (!allowed.includes(template)) {
      throw new ToolInputError(allowed.length ? `you may spawn ${allowed.map((t) => `"${t}"`).join(', ')}, not "${template}"` : 'you may not spawn agents');
    }
    const maxAgents = spec.limits?.max_agents ?? DEFAULT_MAX_AGENTS;
    if (this.agents + tasks.length > maxAgents) {
      throw new ToolInputError(`spawn refused: limits.max_agents is ${maxAgents} and the run has ${this.agents} agents; ${tasks.length} more would pass it`);
    }
    const depth = (this.spawned.get(parent)?.depth ?? 0) + 1;
    const maxDepth = spec.limits?.max_depth ?? DEFAULT_MAX_DEPTH;
    if (depth > maxDepth) throw new ToolInputError(`spawn refused: limits.max_depth is ${maxDepth}, and agents you spawn would be ${depth} levels deep`);
    return tasks.map((task) => {
      const n = (this.counts.get(template) ?? 0) + 1;
      this.counts.set(template, n);
      const agent = instanceName(template, n);
      const profile = instanceProfile(this.sources, template, agent, parent);
      this.spawned.set(agent, { template, parent, depth });
      this.children.set(parent, [...this.childrenOf(parent), agent]);
      this.agents++;
      this.register(profile);
      this.channel.join({ agent, template, role: profile.role, parent, depth }, task);
      return agent;
    });
  }

  /** The agents `parent` spawned, in order. */
  childrenOf(parent: string): readonly string[] {
    return this.children.get(parent) ?? [];
  }

  private spawnsOf(agent: string): string[] {
    const { spec } = this.sources.workflow;
    const spawned = this.spawned.get(agent);
    return (spawned ? spec.templates?.[spawned.template]?.spawns : spec.agents[agent]?.spawns) ?? [];
  }
}
