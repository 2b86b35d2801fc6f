import { Cancelled } from '../../abort-reasons.js';
import type { AgentProfile } from '../../agents/profile.js';
import { ConclaveError } from '../../conclave-error.js';
import { ToolInputError, type ForkPoint, type SpawnCaps, type ToolContext } from '../../agents/tools/tool.js';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { Channel } from '../../channel/channel.js';
import { DEFAULT_MAX_DEPTH } from '../../workflow/limits.js';
import { chosenNameProblem, instanceName } from '../../workflow/spawn-checks.js';
import { instanceProfile, type ProfileSources } from './profiles.js';
import { LocalCeiling, type Ceiling, type Worst } from '../ceilings/reservation.js';
import { SpawnTree } from './spawn-tree.js';

/** The `template` an agent_spawned event gives for a fork (no template's name has parentheses). */
export const FORK = '(fork)';

/** A spawned agent's call would take it, with the agents below it, past its budget_usd: it ends, not the run. */
export class SpawnBudgetReached extends ConclaveError {
  constructor(message: string) {
    super(message, { ending: 'limit' });
  }
}

/** What the spawner does to the run: add an agent, and record an event in the session. */
export interface SpawnerHooks {
  register(profile: AgentProfile, messages?: MessageParam[]): void;
  profile(agent: string): AgentProfile;
  /** What an agent's calls have cost so far. */
  spent(agent: string): number;
  record(event: { type: 'agent_ended'; agent: string; status: 'cancelled' | 'limit' | 'failed' | 'stopped'; reason: string }): void;
}

/**
 * Agents started at run time (docs/workflow.md: templates). An instance of a template is named
 * `TEMPLATE-N`, reports to the agent that spawned it, and gets its task as its first message;
 * `limits.max_agents` bounds the whole team and `limits.max_depth` how deep spawns nest. Names
 * are given in the order spawns happen, so a resume, which runs them again, gives the same ones.
 */
export class Spawner {
  private readonly tree = new SpawnTree();
  private readonly counts = new Map<string, number>();
  private readonly ended = new Set<string>();
  private agents: number;

  constructor(
    private readonly sources: ProfileSources,
    private readonly channel: Channel,
    declared: number,
    private readonly hooks: SpawnerHooks,
  ) {
    this.agents = declared;
  }

  /** spawn, fork and cancel as `agent`'s tools call them; what they change is scheduled at once (`changed`), beside the turn that calls them. */
  toolsFor(agent: string, changed: () => void): Pick<ToolContext, 'spawn' | 'fork' | 'cancel'> {
    const soon = <T>(value: T): T => (queueMicrotask(changed), value);
    return {
      spawn: (t, tasks, caps) => soon(this.spawn(agent, t, tasks, caps)),
      fork: (tasks, at) => soon(this.fork(agent, tasks, at)),
      cancel: (target) => soon(this.cancel(agent, target)),
    };
  }

  /** Starts one instance of `template` per task under `parent`; a refusal is a tool error naming the limit. */
  spawn(parent: string, template: string, tasks: readonly string[], caps: SpawnCaps = {}): string[] {
    const allowed = this.spawnsOf(parent);
    if (!allowed.includes(template)) {
      throw new ToolInputError(allowed.length ? `you may spawn ${allowed.map((t) => `"${t}"`).join(', ')}, not "${template}"` : 'you may not spawn agents');
    }
    const depth = this.checkRoom(parent, tasks.length, 'spawn');
    const own = this.sources.workflow.spec.templates?.[template]?.limits;
    if (caps.name !== undefined) {
      const { templates, people } = this.sources.workflow.spec;
      const problem = chosenNameProblem(caps.name, (n) => this.channel.hasMember(n), Object.keys(templates ?? {}), people?.voters);
      if (problem) throw new ToolInputError(`"${caps.name}" cannot be a new agent's name: ${problem}`);
      if (tasks.length !== 1)
        throw new ToolInputError(`name gives one agent its name, and you gave ${tasks.length} tasks: spawn one task with a name, or leave name out`);
    }
    const named = caps.name;
    caps = { maxTurns: caps.maxTurns ?? own?.max_turns, budgetUsd: caps.budgetUsd ?? own?.budget_usd };
    const left = this.budgetLeft(parent);
    if (caps.budgetUsd !== undefined && left !== undefined && caps.budgetUsd * tasks.length > left) {
      throw new ToolInputError(`spawn refused: ${tasks.length} × $${caps.budgetUsd} is more than the $${Math.max(0, left).toFixed(4)} left of your budget_usd`);
    }
    return tasks.map((task) => {
      const agent = named ?? this.freeName((n) => instanceName(template, n), template);
      this.add(agent, template, parent, depth, instanceProfile(this.sources, template, agent, parent), undefined, task, caps);
      return agent;
    });
  }

  /** The turns `agent` may take, when it was spawned with max_turns. */
  maxTurnsOf(agent: string): number | undefined {
    return this.tree.get(agent)?.maxTurns;
  }

  /**
   * The ceilings a call of `agent` falls under besides the run's: the budget_usd of `agent` and of
   * every agent above it that was given one, each over its whole subtree's calls. A call that
   * passes one waits while a call of that subtree is in flight, and ends `agent` when none is.
   */
  ceilingsOf(agent: string): Ceiling[] {
    return this.tree.lineOf(agent).flatMap((capped) => {
      const { carve, budgetUsd } = this.tree.get(capped)!;
      if (carve === undefined) return [];
      const refusal = (worst: Worst) => {
        const spent = `$${this.subtreeSpent(capped).toFixed(4)} of $${budgetUsd} spent${capped === agent ? '' : ` by @${capped} and the agents below it`}`;
        return new SpawnBudgetReached(`reached its budget_usd (${spent}; the next call could cost up to $${worst.usd.toFixed(4)})`);
      };
      return [{ hold: (worst: Worst) => carve.hold(worst, refusal) }];
    });
  }

  /**
   * Forks `parent` once per task (docs/workflow.md: fork): each fork is `parent` as it is now, the
   * same system prompt, tools and conversation (shared, not copied), so its first request begins
   * with `parent`'s bytes and reads the prompt cache; its task comes as the next user message.
   */
  fork(parent: string, tasks: readonly string[], point: ForkPoint): string[] {
    if (!this.mayFork(parent)) throw new ToolInputError('you may not fork (set fork: true in the workflow)');
    const depth = this.checkRoom(parent, tasks.length, 'fork');
    const last = point.messages.at(-1);
    const uses = last?.role === 'assistant' && Array.isArray(last.content) ? last.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])) : [];
    return tasks.map((task) => {
      const agent = this.freeName((n) => `${parent}-fork-${n}`, `${parent}-fork`);
      const intro =
        `You are @${agent}, a fork of @${parent} made at this call: you have its conversation so far, and one task, below. Do only that task; ` +
        `your answer goes to @${parent}. (The agent you were until now goes on without you.)`;
      const results = uses.map((id) => ({ type: 'tool_result' as const, tool_use_id: id, content: id === point.toolUseId ? intro : 'Not run in this fork.' }));
      const messages = [...point.messages, { role: 'user' as const, content: results }];
      const profile = { ...this.hooks.profile(parent), name: agent, role: 'worker' as const, isLead: false, reportsTo: parent };
      // A fork is its parent as it is now: a spawned parent's own max_turns holds it too.
      const maxTurns = this.tree.get(parent)?.maxTurns;
      this.add(agent, FORK, parent, depth, profile, messages, task, maxTurns === undefined ? {} : { maxTurns });
      return agent;
    });
  }

  /**
   * Cancels `target`, which `caller` spawned (or an agent below one it spawned), and every agent
   * below it, deepest first: each one's turn in flight is aborted, and it takes no more turns.
   * Its spawner, when not the caller, is told. Returns what the caller is told.
   */
  cancel(caller: string, target: string): string {
    if (!this.tree.isBelow(target, caller)) throw new ToolInputError(`you can cancel only agents you spawned, or spawned below them; @${target} is not one`);
    if (this.ended.has(target)) throw new ToolInputError(`@${target} has ended already`);
    const subtree = this.tree.subtree(target).filter((a) => !this.ended.has(a));
    for (const agent of subtree.reverse()) {
      this.ended.add(agent);
      const why = new Cancelled(`@${caller}`);
      this.tree.get(agent)!.controller.abort(why);
      this.hooks.record({ type: 'agent_ended', agent, status: 'cancelled', reason: why.message });
    }
    const parent = this.tree.get(target)!.parent;
    const what = `@${target}${subtree.length > 1 ? ` and the ${subtree.length - 1} agent${subtree.length === 2 ? '' : 's'} below it` : ''}`;
    if (parent !== caller) this.channel.postSystem(`@${caller} cancelled ${what}.`, [parent]);
    return `Cancelled ${what}: ${subtree.length === 1 ? 'it takes' : 'they take'} no more turns.`;
  }

  /**
   * Ends a spawned agent that failed or ran out of its turns: its spawner is told why, as it would
   * be told its answer, and the run goes on. False for a declared agent (its failure is the run's).
   */
  end(agent: string, status: 'limit' | 'failed', reason: string): boolean {
    const spawned = this.tree.get(agent);
    if (!spawned || this.ended.has(agent)) return false;
    this.ended.add(agent);
    spawned.controller.abort(new Cancelled(status === 'limit' ? 'its own limit' : 'its own failure'));
    this.hooks.record({ type: 'agent_ended', agent, status, reason });
    this.channel.postSystem(`@${agent} ${reason}. It takes no more turns.`, [spawned.parent]);
    return true;
  }

  /** The run ended: every spawned agent still going ends with it, deepest first, each recorded. */
  stopAll(reason: string): void {
    const going = [...this.tree.all()].filter(([agent]) => !this.ended.has(agent));
    for (const [agent] of going.sort(([, a], [, b]) => b.depth - a.depth)) {
      this.ended.add(agent);
      this.hooks.record({ type: 'agent_ended', agent, status: 'stopped', reason: `the run ended: ${reason}` });
    }
  }

  /** Whether `agent` was made at run time (its failure is its own, not the run's). */
  isSpawned(agent: string): boolean {
    return this.tree.has(agent);
  }

  /** Whether `agent` ended (cancelled, failed, out of turns): it takes no more turns, and no one waits for it. */
  isEnded(agent: string): boolean {
    return this.ended.has(agent);
  }

  /** The signal an agent's turn listens to: the run's, and for a spawned agent its own cancellation. */
  signalOf(agent: string, run: AbortSignal): AbortSignal {
    const spawned = this.tree.get(agent);
    return spawned ? AbortSignal.any([run, spawned.controller.signal]) : run;
  }

  /** The agents `parent` spawned, in order. */
  childrenOf(parent: string): readonly string[] {
    return this.tree.childrenOf(parent);
  }

  private next(key: string): number {
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    return n;
  }

  /** The next automatic name of its kind that no agent has (the same on a resume: spawns run again in order). */
  private freeName(name: (n: number) => string, key: string): string {
    for (;;) {
      const agent = name(this.next(key));
      if (!this.channel.hasMember(agent)) return agent;
    }
  }

  /** The depth new agents under `parent` would have, once max_agents and max_depth allow `count` more. */
  private checkRoom(parent: string, count: number, what: string): number {
    const { spec } = this.sources.workflow;
    const maxAgents = this.sources.workflow.maxAgents;
    if (this.agents + count > maxAgents)
      throw new ToolInputError(`${what} refused: limits.max_agents is ${maxAgents} and the run has ${this.agents} agents; ${count} more would pass it`);
    const depth = (this.tree.get(parent)?.depth ?? 0) + 1;
    const maxDepth = spec.limits?.max_depth ?? DEFAULT_MAX_DEPTH;
    if (depth > maxDepth) throw new ToolInputError(`${what} refused: limits.max_depth is ${maxDepth}, and agents you ${what} would be ${depth} levels deep`);
    return depth;
  }

  private add(
    agent: string,
    template: string,
    parent: string,
    depth: number,
    profile: AgentProfile,
    messages: MessageParam[] | undefined,
    task: string,
    caps: SpawnCaps = {},
  ): void {
    const { budgetUsd } = caps;
    const carve = budgetUsd === undefined ? undefined : new LocalCeiling((held) => this.subtreeSpent(agent) + held.usd <= budgetUsd);
    this.tree.add(agent, { template, parent, depth, controller: new AbortController(), ...caps, ...(carve ? { carve } : {}) });
    this.agents++;
    this.hooks.register(profile, messages);
    this.channel.join({ agent, template, role: profile.role, parent, depth }, task);
  }

  private mayFork(agent: string): boolean {
    const { spec } = this.sources.workflow;
    const spawned = this.tree.get(agent);
    if (spawned?.template === FORK) return this.mayFork(spawned.parent);
    return (spawned ? spec.templates?.[spawned.template]?.fork : spec.agents[agent]?.fork) === true;
  }

  /**
   * What `agent` may still spend under the budget_usd of itself and of every agent above it given
   * one (each over its whole subtree): the least of them; undefined when none is set.
   */
  spendLeft(agent: string): number | undefined {
    const left = this.tree
      .lineOf(agent)
      .filter((a) => this.tree.get(a)!.budgetUsd !== undefined)
      .map((a) => this.tree.get(a)!.budgetUsd! - this.subtreeSpent(a));
    return left.length === 0 ? undefined : Math.min(...left);
  }

  /** What is left of the nearest budget_usd at or above `agent`; undefined when none is set. */
  private budgetLeft(agent: string): number | undefined {
    const capped = this.tree.lineOf(agent).find((a) => this.tree.get(a)!.budgetUsd !== undefined);
    if (capped === undefined) return undefined;
    // Its own spend, and for each child what it was given (or, given nothing or ended, what it and its agents spent:
    // a cancelled child's unspent carve comes back).
    const children = this.childrenOf(capped).map((c) => (this.ended.has(c) ? undefined : this.tree.get(c)!.budgetUsd) ?? this.subtreeSpent(c));
    return this.tree.get(capped)!.budgetUsd! - this.hooks.spent(capped) - children.reduce((a, b) => a + b, 0);
  }

  /** What `agent` and every agent below it have spent. */
  private subtreeSpent(agent: string): number {
    return this.tree.subtree(agent).reduce((sum, x) => sum + this.hooks.spent(x), 0);
  }

  private spawnsOf(agent: string): string[] {
    const { spec } = this.sources.workflow;
    const spawned = this.tree.get(agent);
    if (spawned?.template === FORK) return this.spawnsOf(spawned.parent);
    return (spawned ? spec.templates?.[spawned.template]?.spawns : spec.agents[agent]?.spawns) ?? [];
  }
}
