import { Parked, RunStopped } from '../abort-reasons.js';
import { setMaxListeners } from 'node:events';
import type { AgentProfile } from '../agents/profile.js';
import { emptyConversation, type Conversation } from '../agents/context.js';
import { Workspace } from '../agents/tools/workspace-root.js';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { Channel, type ProposalView } from '../channel/channel.js';
import { openDocuments, writeDocuments, type FirstTexts } from './run-documents.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import type { Accounting } from './accounting.js';
import { ending, endingOfError, limitEnding, type Ending } from './ending.js';
import type { ProgressListener } from './progress-events.js';
import type { ModelCalls } from './model-calls.js';
import { runCalls } from './run-calls.js';
import { recordEnd, runResult } from './outputs.js';
import { buildProfiles, teamContext } from './profiles.js';
import type { RunOptions, RunResult } from './run-options.js';
import { recordOf, RunLimits } from './run-limits.js';
import { runSetup, type ToolSetup } from './setup.js';
import { editReminders, type Reminders, voteReminders } from './reminders.js';
import { Spawner } from './spawner.js';
import { interruptedEnding, parkedEnding } from './parking.js';
import { takeTurn, type TurnEnd, type TurnHost } from './turn-runner.js';
import { FanIn } from './fan-in.js';
import { expandTeam } from './for-each.js';
import { QueueModes } from './queue-modes.js';
import { Reservations } from './reservation.js';
import { cacheTtlOf, contextTooShort } from './cache-warming.js';
import type { CacheTtl } from '../workflow/types.js';

export type { EndStatus } from '../exit-codes.js';
export type { RunOptions, RunResult } from './run-options.js';

/**
 * The scheduler (docs/design.md: turns, ending): turns for agents with unread messages, up to `concurrency` at
 * once, with managers' fan-in; limits; and the end of the run, noticed the moment nothing is
 * left to do. Every decision is made when something changes, never on a timer.
 */
export class Run {
  private readonly controller = new AbortController();
  private readonly limits: RunLimits;
  private readonly accounting: Accounting;
  /** Where every live call holds its worst case under the run's ceilings. */
  private readonly reservations = new Reservations();
  private readonly calls: ModelCalls;
  private readonly profiles = new Map<string, AgentProfile>();
  private readonly conversations = new Map<string, Conversation>();
  private readonly turns = new Map<string, number>();
  private readonly running = new Set<string>();
  /** Running turns whose call waits for a message batch: they hold no concurrency slot. */
  private readonly batchWaiting = new Set<string>();
  /** Votes first, then reviews of edits: what members still owe when nothing else runs. */
  private reminders: Reminders<unknown>[] = [];
  private readonly shownProposals = new Set<string>();
  private channel: Channel | undefined;
  private spawner: Spawner | undefined;
  private fanIn: FanIn | undefined;
  /** What arrives for an agent during its turn, by its queue mode. */
  private readonly queues: QueueModes;
  private readonly workspace: Workspace;
  /** A resumed run's documents' first texts, for writing their real text back (run-documents.ts). */
  private firstTexts: FirstTexts = new Map();
  private tools: ToolSetup = { env: {} };
  private teamTurns = 0;
  private readonly startedAt = Date.now();
  private ending: Ending | undefined;
  private settled!: () => void;
  private readonly done = new Promise<void>((resolve) => (this.settled = resolve));

  /** How long the prompt cache keeps the run's writes (cacheTtlOf). */
  private readonly cacheTtl: CacheTtl;

  constructor(private readonly options: RunOptions) {
    this.cacheTtl = cacheTtlOf(options.workflow.spec, options.park === true, options.recording.journal.recordedCacheTtl);
    // Every call, wait and tool listens to the run's signal: many at once is the design, not a leak.
    setMaxListeners(0, this.controller.signal);
    this.queues = new QueueModes(options.recording.journal);
    this.limits = new RunLimits(
      options.recording.limits,
      options.recording.limitsOnLive,
      options.recording.elapsedBeforeMs ?? 0,
      (end) => this.stop(end),
      () => this.reservations.wake(),
    );
    ({ accounting: this.accounting, calls: this.calls } = runCalls(options, {
      cacheTtl: this.cacheTtl,
      signal: this.controller.signal,
      reservations: this.reservations,
      limits: () => this.limits.current,
      progress: (event) => this.progress(event),
      spawner: () => this.spawner,
      profile: (agent) => this.profiles.get(agent),
      parkIfStuck: () => this.parkIfStuck(),
      onBatchWait: (agent, waiting) => {
        if (!waiting) return void this.batchWaiting.delete(agent);
        this.batchWaiting.add(agent);
        // Its slot is free: another turn may start, and its call join the same batch.
        if (!this.ending) this.startEligible(false);
      },
    }));
    this.workspace = new Workspace(options.place.workspace, {
      protect: options.identity.ownFiles ?? [],
      secret: options.identity.credentials?.files ?? [],
      githubWorkflows: options.workflow.spec.edit_github_workflows === true,
    });
    options.recording.journal.listen({
      onLive: () => {
        options.recording.onLive?.();
        this.limits.goLive(options.recording.journal);
      },
      onLimits: (limits) => this.limits.replayed(limits),
      onAbandoned: (e) => this.accounting.recordAbandoned(e.agent, e.input_tokens, e.cost_usd, false),
      onStall: (error) => this.stop(endingOfError(error)!),
    });
  }

  async start(): Promise<RunResult> {
    const {
      workflow,
      recording: { journal },
    } = this.options;
    this.limits.start();
    let scope: Scope | undefined;
    try {
      journal.append({
        type: 'run_started',
        workflow: workflow.spec.name,
        limits: recordOf(this.limits.current),
        ...(this.cacheTtl === '1h' ? { cache_ttl: '1h' as const } : {}),
      });
      const setup = await runSetup({ ...this.options, cwd: this.workspace.root, signal: this.controller.signal, progress: (event) => this.progress(event) });
      scope = setup.scope;
      this.tools = setup.tools;
      if (!this.ending) {
        const sources = {
          workflow,
          scope,
          modelOverride: this.options.answers.modelOverride,
          providerOverride: this.options.answers.providerOverride,
          mcp: this.tools.mcp,
          cacheTtl: this.cacheTtl,
          ...teamContext(workflow, scope),
        };
        const team = expandTeam(workflow, scope);
        const profiles = buildProfiles(sources, team);
        for (const profile of profiles) this.addAgent(profile);
        const short = sources.context === undefined || journal.replaying ? undefined : contextTooShort(sources.context, profiles);
        if (short) this.progress({ type: 'warning', message: short });
        this.channel = new Channel(team.graph, (event) => (journal.append(event), this.queues.arrived(event, journal.replaying)));
        const hooks = {
          register: (p: AgentProfile, m?: MessageParam[]) => this.addAgent(p, m),
          profile: (a: string) => this.profiles.get(a)!,
          spent: (a: string) => this.accounting.of(a).costUsd,
        };
        this.spawner = new Spawner(sources, this.channel, this.profiles.size, { ...hooks, record: (event) => journal.append(event) });
        this.fanIn = new FanIn({
          channel: this.channel,
          spawner: this.spawner,
          profiles: this.profiles,
          running: this.running,
          hasTurnsLeft: (n) => this.hasTurnsLeft(n),
        });
        this.reminders = [voteReminders(this.channel, (p) => this.reportProposal(p)), editReminders(this.channel)];
        this.firstTexts = await openDocuments(workflow, scope, this.workspace, journal, this.channel);
        this.channel.postKickoff(fillTemplate(workflow.templates.get('kickoff')!, scope));
        this.pump();
      }
    } catch (e) {
      const end = endingOfError(e);
      if (end) this.stop(end);
    }
    this.settle();
    await this.done;
    // A batch being created when the run stopped is noted (and cancelled) before the session closes.
    await this.calls.batches?.settled();
    await this.tools.mcp?.close();
    this.limits.stop();
    journal.close();
    return this.finish(scope);
  }

  /** --park: when every turn that runs waits for a message batch, the run parks (parking.ts). */
  private parkIfStuck(): void {
    const batches = this.calls.batches;
    if (!this.options.park || this.ending || !batches || this.running.size === 0 || batches.waitingCalls < this.running.size) return;
    const end = parkedEnding(batches);
    this.stop(end, new Parked(end.reason));
  }

  private addAgent(profile: AgentProfile, messages?: MessageParam[]): void {
    this.profiles.set(profile.name, profile);
    this.conversations.set(profile.name, messages ? { messages } : emptyConversation());
    this.turns.set(profile.name, 0);
  }

  /** SIGINT or SIGTERM: in-flight calls are aborted and the run ends with 130 or 143 (what becomes of its batches: parking.ts). */
  interrupt(signal: 'SIGINT' | 'SIGTERM'): void {
    if (this.ending) return;
    const end = interruptedEnding(signal, this.calls.batches);
    this.stop(end, new RunStopped(end.reason, signal === 'SIGINT'));
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
      if (this.running.size - this.batchWaiting.size >= this.limits.current.concurrency || this.teamTurns >= this.limits.current.maxTurns) return;
      if (this.running.has(name) || !this.hasTurnsLeft(name)) continue;
      if (!ignoreFanIn && this.fanIn!.waits(name)) continue;
      this.startTurn(name);
    }
  }

  private nothingRuns(): void {
    const channel = this.channel!;
    const wanting = channel.withUnread().filter((n) => !this.spawner!.isEnded(n));
    if (wanting.length > 0) {
      if (this.teamTurns >= this.limits.current.maxTurns) return this.stop(limitEnding('max_turns', `(${this.limits.current.maxTurns} turns for the team)`));
      // A spawned agent out of turns ends, and its spawner is told; a declared one stops the run.
      const ended = wanting.filter((n) =>
        this.spawner!.end(
          n,
          'limit',
          `stopped: it reached ${this.spawner!.maxTurnsOf(n) ? 'its max_turns' : 'max_turns_per_agent'} (${this.turnLimitOf(n)}) with messages it did not ` +
            `handle`,
        ),
      );
      if (ended.length > 0) return this.pump();
      const capped = wanting.map((n) => `@${n}`).join(', ');
      return this.stop(
        limitEnding(
          'max_turns_per_agent',
          `(${this.limits.current.maxTurnsPerAgent}) for ${capped}, who still ${wanting.length === 1 ? 'has' : 'have'} messages to handle`,
        ),
      );
    }
    const canTakeTurn = (v: string) => this.hasTurnsLeft(v) && this.teamTurns < this.limits.current.maxTurns;
    if (this.reminders.some((r) => r.settle(canTakeTurn))) return this.pump();
    this.stop(ending('idle', 'ended idle: no agent has anything left to do'));
  }

  private hasTurnsLeft(name: string): boolean {
    return this.turns.get(name)! < this.turnLimitOf(name) && !this.spawner!.isEnded(name);
  }

  private turnLimitOf(name: string): number {
    return Math.min(this.limits.current.maxTurnsPerAgent, this.spawner!.maxTurnsOf(name) ?? Infinity);
  }

  private startTurn(name: string): void {
    this.running.add(name);
    const turn = this.turns.get(name)! + 1;
    const begin = (): Promise<TurnEnd> => {
      this.teamTurns++;
      this.turns.set(name, turn);
      return takeTurn(this.turnHost, name, turn);
    };
    // Re-executing a recording, a turn the recorded run started later than now starts there (journal.ts).
    const later = this.options.recording.journal.turnStart(name, turn, this.controller.signal);
    // A turn never throws (a recorded start the run never reaches is given up with it): the run
    // ends once every turn's end is applied (settle waits for `running` to empty).
    void (later !== undefined ? later.then(begin, (): TurnEnd => ({})) : begin()).then((end) => this.apply(name, end));
  }

  /** The scheduler applies how a turn ended: the one place a turn's outcome changes the run. */
  private apply(name: string, end: TurnEnd): void {
    if (end.stop) this.stop(end.stop);
    this.running.delete(name);
    this.pump();
    // The turns left may all wait for batches now: park without waiting for their next poll.
    this.parkIfStuck();
  }

  /** What a turn needs of the run (turn-runner.ts). */
  private get turnHost(): TurnHost {
    const { journal } = this.options.recording;
    return {
      journal,
      channel: this.channel!,
      spawner: this.spawner!,
      queues: this.queues,
      calls: this.calls,
      accounting: this.accounting,
      workspace: this.workspace,
      tools: this.tools,
      elsewhere: this.options.place.elsewhere,
      signal: this.controller.signal,
      profile: (agent) => this.profiles.get(agent)!,
      conversation: (agent) => this.conversations.get(agent)!,
      keepConversation: (agent, conversation) => this.conversations.set(agent, conversation),
      statusLine: (turn) => this.limits.statusLine(turn, this.teamTurns),
      ending: () => this.ending !== undefined,
      elapsedMs: () => this.elapsedMs(),
      progress: (event) => this.progress(event),
      reportProposal: (p) => this.reportProposal(p),
      pump: () => this.pump(),
    };
  }

  /** Progress, except while a resume re-executes its recording (a replay shows it: that is its point). */
  private progress(event: Parameters<ProgressListener>[0]): void {
    if (!this.options.recording.journal.replaying || this.options.answers.live === false) this.options.progress(event);
  }

  private elapsedMs = (): number => (this.options.recording.elapsedBeforeMs ?? 0) + Date.now() - this.startedAt;

  private reportProposal(p: ProposalView): void {
    if (this.shownProposals.has(p.id)) return;
    this.shownProposals.add(p.id);
    this.progress({ type: 'proposal', id: p.id, status: p.status, winner: p.winner });
  }

  private stop(end: Ending, why: RunStopped = new RunStopped(end.reason)): void {
    if (this.ending) return;
    this.ending = end;
    this.controller.abort(why);
    this.settle();
  }

  private settle(): void {
    if (this.ending && this.running.size === 0) this.settled();
  }

  private finish(scope: Scope | undefined): RunResult {
    const {
      workflow,
      recording: { journal },
    } = this.options;
    const end = this.ending!;
    const channel = this.channel;
    const names = [...this.profiles.keys()];
    const result = runResult(end, workflow, scope, {
      agents: Object.fromEntries(
        names.map((n) => [n, { last_message: channel?.lastMessageFrom(n)?.text ?? '', turns: this.turns.get(n)!, spend: this.accounting.of(n) }]),
      ),
      proposals: channel?.allProposals() ?? [],
      documents: channel?.documents.final() ?? {},
      writeDocuments: (documents) =>
        this.options.replay || journal.replaying || journal.diverged
          ? []
          : writeDocuments(workflow, documents, this.workspace, this.firstTexts, this.options.recording.mask),
      total: this.accounting.total,
      paidUsd: this.accounting.paidUsd,
      cached: this.accounting.cached,
      promptCache: this.accounting.promptCache,
      ...(this.calls.batches ? { batches: { ...this.accounting.batched, ...this.calls.batches.reserved() } } : {}),
      limits: this.limits.current,
    });
    if (!journal.replaying && !journal.diverged) this.spawner?.stopAll(result.reason);
    recordEnd(journal, result);
    return result;
  }
}
