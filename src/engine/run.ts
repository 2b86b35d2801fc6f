import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { AgentProfile } from '../agents/profile.js';
import { Workspace } from '../agents/tools/workspace-root.js';
import { runTurn } from '../agents/turn.js';
import { Channel, type ProposalView } from '../channel/channel.js';
import { totalTokens } from '../provider/pricing.js';
import type { ResponseCache } from '../session/cache.js';
import type { RecordedLimits } from '../session/format.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import { describeDuration, type Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { Accounting, type Spend } from './accounting.js';
import { ending, endingOfError, interrupted, limitEnding, type Ending } from './ending.js';
import type { ProgressListener } from './events.js';
import type { Journal } from './journal.js';
import { ModelCalls, type CallModel } from './model-calls.js';
import { evaluateOutputs } from './outputs.js';
import { buildProfiles } from './profiles.js';
import { runSetup } from './setup.js';
import { toolHooks } from './tool-calls.js';

export type { EndStatus } from './ending.js';

export interface RunOptions {
  workflow: Workflow;
  inputs: Record<string, Scalar>;
  runId: string;
  sessionPath: string;
  /** The directory setup steps and workspace tools run in. */
  workspace: string;
  /** The process environment that setup steps and run_command start from. */
  env: NodeJS.ProcessEnv;
  modelOverride?: string;
  callModel: CallModel;
  /** Where events go; when resuming or replaying, also where recorded answers come from. */
  journal: Journal;
  /** The limits the run starts with: the workflow's, or for a resume those its recording started with. */
  limits: Limits;
  /**
   * A resume's limits from where the recording ends: when they differ from the recorded ones, a
   * `limits_changed` event records them at that point (after the `resumed` event).
   */
  limitsOnLive?: Limits;
  /** Written first when the recording is used up (a resume's `resumed` event). */
  onLive?: () => void;
  /** False for --replay and --offline: a model call nothing recorded or cached can answer fails the run instead of reaching the network. */
  liveCalls?: boolean;
  /** Responses kept across runs (--cache): a hit costs nothing and calls no one. */
  cache?: ResponseCache;
  /** Time the run had already used before it was resumed, for limits.timeout. */
  elapsedBeforeMs?: number;
  progress: ProgressListener;
}

export interface RunResult extends Ending {
  outputs: Record<string, string>;
  /** Outputs whose values could not be evaluated, with where and why. */
  outputErrors: string[];
  usage: Spend;
  agents: Record<string, { turns: number; spend: Spend }>;
  proposals: ProposalView[];
  /** The limits in force when the run ended. */
  limits: Limits;
}

/**
 * The scheduler (DESIGN §3, §4): turns for agents with unread messages, up to `concurrency` at
 * once, with managers' fan-in; limits; and the end of the run, noticed the moment nothing is
 * left to do. Every decision is made when something changes, never on a timer.
 */
export class Run {
  private readonly controller = new AbortController();
  private limits: Limits;
  private readonly accounting: Accounting;
  private readonly calls: ModelCalls;
  private readonly profiles = new Map<string, AgentProfile>();
  private readonly conversations = new Map<string, MessageParam[]>();
  private readonly turns = new Map<string, number>();
  private readonly running = new Set<string>();
  private readonly reminded = new Set<string>();
  /** Proposals whose end was already shown. */
  private readonly reported = new Set<string>();
  private channel: Channel | undefined;
  private readonly workspace: Workspace;
  private toolEnv: NodeJS.ProcessEnv;
  private teamTurns = 0;
  private readonly startedAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private ending: Ending | undefined;
  private settled!: () => void;
  private readonly done = new Promise<void>((resolve) => (this.settled = resolve));

  constructor(private readonly options: RunOptions) {
    this.limits = { ...options.limits };
    this.accounting = new Accounting(() => this.limits, options.workflow.spec.pricing, (model) =>
      this.progress({ type: 'warning', message: `the price table does not know model "${model}": its cost is estimated at the highest price, $15 / $75 per million tokens; set pricing: in the workflow` }),
    );
    this.calls = new ModelCalls({
      journal: options.journal,
      accounting: this.accounting,
      callModel: options.callModel,
      liveCalls: options.liveCalls !== false,
      cache: options.cache,
      signal: this.controller.signal,
      progress: (event) => this.progress(event),
    });
    this.workspace = new Workspace(options.workspace);
    this.toolEnv = options.env;
    options.journal.listen({
      onLive: () => this.goneLive(),
      onLimits: (limits) => this.setLimits(limitsOf(limits)),
      onStall: (error) => this.stop(ending('error', error.message)),
    });
  }

  async start(): Promise<RunResult> {
    const { journal, workflow } = this.options;
    // Wall-clock time is not replayed: the timeout is the one the run goes on with.
    this.armTimer(this.options.limitsOnLive ?? this.limits);
    let scope: Scope | undefined;
    try {
      journal.append({ type: 'run_started', workflow: workflow.spec.name, limits: recordOf(this.limits) });
      const setup = await runSetup({
        ...this.options,
        cwd: this.workspace.root,
        signal: this.controller.signal,
        progress: (event) => this.progress(event),
      });
      scope = setup.scope;
      this.toolEnv = setup.toolEnv;
      if (!this.ending) {
        for (const profile of buildProfiles(workflow, scope, this.options.modelOverride)) {
          this.profiles.set(profile.name, profile);
          this.conversations.set(profile.name, []);
          this.turns.set(profile.name, 0);
        }
        this.channel = new Channel(workflow.graph, (event) => journal.append(event));
        this.channel.postKickoff(fillTemplate(workflow.templates.get('kickoff')!, scope));
        this.pump();
      }
    } catch (e) {
      const end = endingOfError(e);
      if (end) this.stop(end);
    }
    this.settle();
    await this.done;
    clearTimeout(this.timer);
    journal.close();
    return this.finish(scope);
  }

  /** SIGINT or SIGTERM: in-flight calls are aborted and the run ends with 130 or 143. */
  interrupt(signal: 'SIGINT' | 'SIGTERM'): void {
    this.stop(interrupted(signal));
  }

  // --- limits --------------------------------------------------------------------------------

  /** The recording is used up: a resume records that it took over, and the limits it goes on with. */
  private goneLive(): void {
    this.options.onLive?.();
    const next = this.options.limitsOnLive;
    if (!next) return;
    const changed = (Object.keys(next) as (keyof Limits)[]).filter((k) => next[k] !== this.limits[k]);
    if (changed.length === 0) return;
    this.options.journal.append({ type: 'limits_changed', limits: recordOf(next), changed });
    this.setLimits(next);
  }

  private setLimits(limits: Limits): void {
    this.limits = { ...limits };
    this.accounting.recheck();
  }

  private armTimer(limits: Limits): void {
    clearTimeout(this.timer);
    const left = Math.max(0, limits.timeoutMs - (this.options.elapsedBeforeMs ?? 0));
    this.timer = setTimeout(() => this.stop(limitEnding('timeout', `(${describeDuration(limits.timeoutMs)})`)), left);
  }

  // --- scheduling ----------------------------------------------------------------------------

  /** Starts every turn that may start now; when none runs and none may start, decides how the run ends. */
  private pump(): void {
    if (this.ending) return this.settle();
    this.startEligible(false);
    if (this.running.size > 0) return;
    // Nothing runs, yet managers may wait on each other's fan-in: let them go rather than stall.
    this.startEligible(true);
    if (this.running.size > 0) return;
    this.nothingRuns();
  }

  private startEligible(ignoreFanIn: boolean): void {
    const channel = this.channel!;
    for (const name of channel.withUnread()) {
      if (this.running.size >= this.limits.concurrency || this.teamTurns >= this.limits.maxTurns) return;
      if (this.running.has(name) || !this.hasTurnsLeft(name)) continue;
      if (!ignoreFanIn && this.waitsForFanIn(name)) continue;
      this.startTurn(name);
    }
  }

  /**
   * DESIGN §3 fan-in: a manager with `wake: all` waits while the agents its last message
   * addressed still have that work running or queued, and is then woken once with every answer.
   */
  private waitsForFanIn(name: string): boolean {
    if (this.profiles.get(name)!.wake !== 'all') return false;
    const last = this.channel!.lastMessageFrom(name);
    if (!last) return false;
    return last.recipients.some(
      (r) => r !== name && (this.running.has(r) || (this.channel!.hasUnread(r) && this.hasTurnsLeft(r))),
    );
  }

  private nothingRuns(): void {
    const channel = this.channel!;
    const wanting = channel.withUnread();
    if (wanting.length > 0) {
      if (this.teamTurns >= this.limits.maxTurns) return this.stop(limitEnding('max_turns', `(${this.limits.maxTurns} turns for the team)`));
      const capped = wanting.map((n) => `@${n}`).join(', ');
      return this.stop(
        limitEnding('max_turns_per_agent', `(${this.limits.maxTurnsPerAgent}) for ${capped}, who still ${wanting.length === 1 ? 'has' : 'have'} messages to handle`),
      );
    }
    const waiting = channel.waitingVoters();
    if (waiting.length > 0) {
      // Voters who took their turn without voting are reminded once; then the proposal closes with the votes cast.
      let reminded = false;
      for (const { proposal, voters } of waiting) {
        const fresh = voters.filter((v) => this.hasTurnsLeft(v) && this.teamTurns < this.limits.maxTurns && !this.reminded.has(`${proposal}\0${v}`));
        if (fresh.length === 0) continue;
        fresh.forEach((v) => this.reminded.add(`${proposal}\0${v}`));
        const question = channel.proposal(proposal)!.question;
        channel.postSystem(`Proposal "${proposal}" is still waiting for your vote: ${question} Use the vote tool.`, fresh);
        reminded = true;
      }
      if (!reminded) for (const { proposal } of waiting) this.reportProposal(channel.expire(proposal));
      return this.pump();
    }
    this.stop(ending('idle', 'ended idle: no agent has anything left to do'));
  }

  private hasTurnsLeft(name: string): boolean {
    return this.turns.get(name)! < this.limits.maxTurnsPerAgent;
  }

  // --- one turn ------------------------------------------------------------------------------

  private startTurn(name: string): void {
    this.running.add(name);
    this.teamTurns++;
    const turn = this.turns.get(name)! + 1;
    this.turns.set(name, turn);
    void this.takeTurn(name, turn).finally(() => {
      this.running.delete(name);
      this.pump();
    });
  }

  private async takeTurn(name: string, turn: number): Promise<void> {
    const { journal } = this.options;
    const channel = this.channel!;
    const delivery = channel.deliver(name);
    const spentBefore = this.accounting.of(name);
    const signal = this.controller.signal;
    try {
      journal.append({ type: 'turn_started', agent: name, turn, through: delivery.through, messages: delivery.messages.map((m) => m.id) });
      this.progress({ type: 'turn_started', agent: name, turn, messages: delivery.messages.length });
      const outcome = await runTurn(
        this.profiles.get(name)!,
        this.conversations.get(name)!,
        delivery.messages,
        this.statusLine(turn),
        { agent: name, channel, workspace: this.workspace, env: this.toolEnv, signal },
        { call: (request, step) => this.calls.call(name, turn, step, request), ...toolHooks(journal, name, turn, signal, (e) => this.progress(e)) },
      );
      if (this.ending) return channel.release(delivery);
      this.conversations.set(name, outcome.conversation);
      const posted = outcome.text ? channel.post(name, outcome.text).message : undefined;
      if (posted) this.progress({ type: 'posted', agent: name, recipients: posted.recipients, text: posted.text });
      channel.acknowledge(delivery);
      channel.turnEnded(name);
      journal.append({ type: 'turn_ended', agent: name, turn, elapsed_ms: this.elapsedMs() });
      journal.sync();
      const spent = this.accounting.of(name);
      this.progress({
        type: 'turn_ended',
        agent: name,
        turn,
        recipients: posted ? posted.recipients : null,
        costUsd: spent.costUsd - spentBefore.costUsd,
        tokens: totalTokens(spent.usage) - totalTokens(spentBefore.usage),
      });
      for (const p of channel.allProposals()) if (p.status !== 'open') this.reportProposal(p);
      if (outcome.completion) {
        const { status, summary } = outcome.completion;
        this.stop(ending(status, status === 'success' ? `@${name} completed the run` : `@${name} ended the run with failure`, summary));
      }
    } catch (e) {
      channel.release(delivery);
      const end = this.ending ? undefined : endingOfError(e, name);
      if (!end) return;
      const error = e instanceof Error ? e.message : String(e);
      if (!journal.diverged) {
        try {
          journal.append({ type: 'turn_failed', agent: name, turn, error });
        } catch (divergence) {
          return this.stop(endingOfError(divergence)!);
        }
        this.progress({ type: 'turn_failed', agent: name, turn, error });
      }
      this.stop(end);
    }
  }

  /** Progress, except while a resume re-executes its recording (a replay shows it: that is its point). */
  private progress(event: Parameters<ProgressListener>[0]): void {
    if (!this.options.journal.replaying || this.options.liveCalls === false) this.options.progress(event);
  }

  private elapsedMs(): number {
    return (this.options.elapsedBeforeMs ?? 0) + Date.now() - this.startedAt;
  }

  /**
   * What is left, at the top of each turn's message. Turns only: spend differs between a paid
   * run and a rerun served from the response cache, and would make every later request miss.
   */
  private statusLine(turn: number): string {
    return `[Turn ${turn} of at most ${this.limits.maxTurnsPerAgent} for you · team turns: ${this.teamTurns} of ${this.limits.maxTurns}]`;
  }

  private reportProposal(p: ProposalView): void {
    if (this.reported.has(p.id)) return;
    this.reported.add(p.id);
    this.progress({ type: 'proposal', id: p.id, status: p.status, winner: p.winner });
  }

  // --- the end -------------------------------------------------------------------------------

  private stop(end: Ending): void {
    if (this.ending) return;
    this.ending = end;
    this.controller.abort();
    this.settle();
  }

  private settle(): void {
    if (this.ending && this.running.size === 0) this.settled();
  }

  private finish(scope: Scope | undefined): RunResult {
    const { workflow, journal } = this.options;
    const end = this.ending!;
    const channel = this.channel;
    const names = [...this.profiles.keys()];
    const proposals = channel?.allProposals() ?? [];
    const { outputs, errors } = scope
      ? evaluateOutputs(workflow, scope, {
          ending: end,
          agents: Object.fromEntries(names.map((n) => [n, { last_message: channel?.lastMessageFrom(n)?.text ?? '', turns: this.turns.get(n)! }])),
          proposals,
          total: this.accounting.total,
        })
      : { outputs: {}, errors: [] };
    const exitCode = end.exitCode === 0 && errors.length > 0 ? 1 : end.exitCode;
    const result: RunResult = {
      ...end,
      exitCode,
      outputs,
      outputErrors: errors,
      usage: this.accounting.total,
      agents: Object.fromEntries(names.map((n) => [n, { turns: this.turns.get(n)!, spend: this.accounting.of(n) }])),
      proposals,
      limits: this.limits,
    };
    // A run stopped while it re-executed its recording, or that diverged from it, adds nothing:
    // the session stays as it was, and can be resumed again.
    if (!journal.replaying && !journal.diverged) {
      journal.append({ type: 'run_ended', status: result.status, exit_code: exitCode, reason: result.reason, summary: result.summary, outputs, output_errors: errors, usage: result.usage });
      journal.sync();
    }
    return result;
  }
}

/** Limits as the session records them (JSON has no Infinity). */
export function recordOf(limits: Limits): RecordedLimits {
  return { ...limits, maxTokensTotal: Number.isFinite(limits.maxTokensTotal) ? limits.maxTokensTotal : null };
}

export function limitsOf(recorded: RecordedLimits): Limits {
  return { ...recorded, maxTokensTotal: recorded.maxTokensTotal ?? Infinity };
}
