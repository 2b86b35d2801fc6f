import { RunStopped } from '../abort-reasons.js';
import { setMaxListeners } from 'node:events';
import type { AgentProfile } from '../agents/profile.js';
import type { Workspace } from '../agents/tools/workspace-root.js';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { openDocuments, type FirstTexts } from './run-documents.js';
import { endRun } from './run-end.js';
import { workspaceOf } from './run-workspace.js';
import type { Scope } from '../workflow/evaluate.js';
import type { Accounting } from './ceilings/accounting.js';
import { ending, endingOfError, type Ending } from './ending.js';
import { RunProgress } from './run-progress.js';
import type { ModelCalls } from './calls/model-calls.js';
import { runCalls } from './calls/run-calls.js';
import type { RunOptions, RunResult } from './run-options.js';
import { recordOf, RunLimits } from './ceilings/run-limits.js';
import { runSetup, type ToolSetup } from './setup.js';
import { assembleTeam, type Team } from './teams/team.js';
import { AgentTable } from './agent-table.js';
import { TurnCounts } from './turn-counts.js';
import { interruptedStop, parkingStop } from './batches/parking.js';
import { takeTurn, type TurnEnd, type TurnHost } from './turn-runner.js';
import { turnHostOf } from './run-turn-host.js';
import { QueueModes } from './queue-modes.js';
import { Reservations } from './ceilings/reservation.js';
import { layoutFields, promptLayoutOf, type PromptLayout } from './prompt-cache/prompt-layout.js';
import { PeopleVotes } from './people-votes.js';
import { TrustPolicy } from './trust/trust.js';
import { Taints } from './trust/taints.js';
import { estimateGate } from './estimate/estimate-gate.js';
import type { ProviderName } from '../provider/clouds.js';
import { detached } from '../detached.js';
import { channelReactions } from './channel-reactions.js';

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
  private readonly agents = new AgentTable();
  private readonly turns = new TurnCounts(
    () => this.limits.current,
    () => this.team?.spawner,
  );
  private readonly running = new Set<string>();
  /** Running turns whose call waits for a message batch: they hold no concurrency slot. */
  private readonly batchWaiting = new Set<string>();
  private readonly progress: RunProgress;
  /** Made once setup has run. */
  private team: Team | undefined;
  private host: TurnHost | undefined;
  /** What arrives for an agent during its turn, by its queue mode. */
  private readonly queues: QueueModes;
  private readonly workspace: Workspace;
  /** A resumed run's documents' first texts, for writing their real text back (run-documents.ts). */
  private firstTexts: FirstTexts = new Map();
  private tools: ToolSetup = { env: {} };
  private readonly startedAt = Date.now();
  private ending: Ending | undefined;
  private settled!: () => void;
  private readonly done = new Promise<void>((resolve) => (this.settled = resolve));

  /** How the run's prompts are laid out for the prompt cache. */
  private readonly layout: PromptLayout;
  /** Who has read text from outside the team, and where text comes from (taints.ts, trust.ts). */
  private readonly taints: Taints;
  /** Proposals that wait for people's votes (people-votes.ts). */
  private readonly people: PeopleVotes;

  constructor(private readonly options: RunOptions) {
    this.progress = new RunProgress(options);
    this.layout = promptLayoutOf(options.workflow.spec, options.park === true, options.recording.journal.recorded);
    // Every call, wait and tool listens to the run's signal: many at once is the design, not a leak.
    setMaxListeners(0, this.controller.signal);
    this.queues = new QueueModes(options.recording.journal);
    const allowed = options.workflow.spec.untrusted === 'allow';
    this.taints = new Taints(new TrustPolicy(options.workflow.spec, options.trust), options.recording.journal, allowed, this.progress.tell);
    this.people = new PeopleVotes(() => this.team!.channel, options.recording.journal, options.people, this.progress, this.controller.signal);
    this.limits = new RunLimits(options.recording, { timeout: (end) => this.stop(end), change: () => this.reservations.wake() });
    ({ accounting: this.accounting, calls: this.calls } = runCalls(options, {
      cacheTtl: this.layout.cacheTtl,
      signal: this.controller.signal,
      reservations: this.reservations,
      limits: () => this.limits.current,
      progress: this.progress.tell,
      spawner: () => this.team?.spawner,
      profile: (agent) => this.agents.profiles.get(agent),
      batchesChanged: () => this.step(() => this.parkIfStuck()),
      onBatchWait: (agent, waiting) =>
        this.step(() => {
          if (!waiting) return void this.batchWaiting.delete(agent);
          this.batchWaiting.add(agent);
          // Its slot is free: another turn may start, and its call join the same batch.
          if (!this.ending) this.startEligible(false);
        }),
    }));
    this.workspace = workspaceOf(options);
    options.recording.journal.listen({
      onLive: () => {
        options.recording.onLive?.();
        this.limits.goLive(options.recording.journal);
      },
      onLimits: (limits) => this.limits.replayed(limits),
      onAbandoned: (e) => this.accounting.recordAbandoned(e.agent, e.input_tokens, e.cost_usd, false),
      onStall: (error) => this.fail(error),
    });
  }

  async start(): Promise<RunResult> {
    const { workflow } = this.options;
    const { journal } = this.options.recording;
    this.limits.start();
    let scope: Scope | undefined;
    try {
      journal.append({
        type: 'run_started',
        workflow: workflow.spec.name,
        limits: recordOf(this.limits.current),
        ...layoutFields(this.layout),
      });
      const setup = await runSetup({ ...this.options, cwd: this.workspace.root, signal: this.controller.signal, progress: this.progress.tell });
      scope = setup.scope;
      this.tools = setup.tools;
      if (!this.ending) {
        const team = assembleTeam(this.options, scope, this.tools.mcp, this.layout, this.taints.policy, {
          register: (p: AgentProfile, m?: MessageParam[]) => this.addAgent(p, m),
          profile: (a: string) => this.agents.profile(a),
          spent: (a: string) => this.accounting.of(a).costUsd,
          record: (event) => journal.append(event),
          profiles: this.agents.profiles,
          running: this.running,
          hasTurnsLeft: (n) => this.turns.hasTurnsLeft(n),
          onChannelEvent: channelReactions({ journal, people: this.people, taints: this.taints, queues: this.queues }),
          onProposalClosed: this.progress.proposal,
          warn: (message) => this.progress.tell({ type: 'warning', message }),
        });
        this.team = team;
        const price = (model: string, provider: ProviderName, batch: boolean) => this.accounting.priceOf(model, provider, batch);
        const over = await estimateGate({ ...this.options, limits: this.limits.current, team, scope, price, signal: this.controller.signal });
        if (over) this.stop(over);
      }
      if (!this.ending) {
        this.firstTexts = await openDocuments(workflow, scope, this.workspace, journal, this.team!.channel);
        this.taints.documentsOpened(workflow, this.agents.profiles.keys());
        this.team!.channel.postKickoff(this.taints.kickoff(workflow.templates.get('kickoff')!, scope));
        this.pump();
      }
    } catch (e) {
      this.fail(e);
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
    const parks = this.options.park && !this.ending ? parkingStop(this.calls.batches, this.running.size) : undefined;
    if (parks) this.stop(...parks);
  }

  private addAgent(profile: AgentProfile, messages?: MessageParam[]): void {
    this.agents.add(profile, messages);
    this.turns.add(profile.name);
    this.taints.joined(profile);
  }

  /** SIGINT or SIGTERM: in-flight calls are aborted and the run ends with 130 or 143 (what becomes of its batches: parking.ts). */
  interrupt(signal: 'SIGINT' | 'SIGTERM'): void {
    this.step(() => this.ending || this.stop(...interruptedStop(signal, this.calls.batches)));
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
    const { channel, fanIn } = this.team!;
    for (const name of channel.withUnread()) {
      if (this.running.size - this.batchWaiting.size >= this.limits.current.concurrency || this.turns.teamCapped) return;
      if (this.running.has(name) || !this.turns.hasTurnsLeft(name)) continue;
      if (!ignoreFanIn && fanIn.waits(name)) continue;
      this.startTurn(name);
    }
  }

  private nothingRuns(): void {
    const { channel, spawner, reminders } = this.team!;
    const wanting = channel.withUnread().filter((n) => !spawner.isEnded(n));
    if (wanting.length > 0) {
      const end = this.turns.outOfTurns(wanting);
      return end ? this.stop(end) : this.pump();
    }
    if (reminders.some((r) => r.settle((agent) => this.turns.canTakeTurn(agent)))) return this.pump();
    if (this.people.settle()) return this.pump();
    // Only people's votes can move the run on: it parks (--park, and a replay, which has no one to wait for), or waits in process.
    if (this.people.waiting().length > 0)
      return this.options.park || this.options.replay ? this.stop(...this.people.parkedStop()) : this.people.waitInProcess(() => this.step(() => this.pump()));
    this.stop(ending('idle', 'ended idle: no agent has anything left to do'));
  }

  private startTurn(name: string): void {
    this.running.add(name);
    const turn = this.turns.of(name) + 1;
    const begin = (): Promise<TurnEnd> => {
      this.turns.begin(name, turn);
      return takeTurn(this.turnHost, name, turn);
    };
    // Re-executing a recording, a turn the recorded run started later than now starts there (journal.ts).
    const later = this.options.recording.journal.turnStart(name, turn, this.controller.signal);
    // A turn never throws (a recorded start the run never reaches is given up with it): the run
    // ends once every turn's end is applied (settle waits for `running` to empty).
    detached(
      (later !== undefined ? later.then(begin, (): TurnEnd => ({})) : begin()).then((end) => this.step(() => this.apply(name, end))),
      this.fail,
    );
  }

  /** The scheduler applies how a turn ended: the one place a turn's outcome changes the run. */
  private apply(name: string, end: TurnEnd): void {
    if (end.stop) this.stop(end.stop);
    this.running.delete(name);
    this.pump();
    // The turns left may all wait for batches now: park without waiting for their next poll.
    this.parkIfStuck();
  }

  /** What a turn needs of the run (turn-runner.ts): made once, when the first turn starts, when the team and the tools are set. */
  private get turnHost(): TurnHost {
    const { queues, calls, accounting, workspace, tools, agents, taints } = this;
    this.host ??= turnHostOf(
      this.options,
      this.team!,
      this.progress,
      { queues, calls, accounting, workspace, tools, agents, taints, signal: this.controller.signal },
      {
        statusLine: (turn) => this.limits.statusLine(turn, this.turns.team),
        ending: () => this.ending !== undefined,
        elapsedMs: () => this.elapsedMs(),
        pump: () => this.pump(),
      },
    );
    return this.host;
  }

  /** The one way into the run from outside a turn: a throw (a recording that differs, a full disk) stops it with its reason (ARCHITECTURE.md). */
  private step(what: () => void): void {
    try {
      what();
    } catch (e) {
      this.fail(e);
    }
  }

  /** A throw, or a rejection handed over with detached(): the run stops with its reason. */
  private readonly fail = (e: unknown): void => this.stop(endingOfError(e) ?? ending('error', e instanceof Error ? e.message : String(e)));

  private elapsedMs = (): number => (this.options.recording.elapsedBeforeMs ?? 0) + Date.now() - this.startedAt;

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
    const { team, agents, turns, accounting, calls, limits, people, workspace, firstTexts } = this;
    return endRun(this.options, this.ending!, scope, { team, agents, turns, accounting, calls, limits, people, workspace, firstTexts });
  }
}
