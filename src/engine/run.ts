import { setMaxListeners } from 'node:events';
import type { AgentProfile } from '../agents/profile.js';
import type { Workspace } from '../agents/tools/workspace-root.js';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { openDocuments, type FirstTexts } from './run-documents.js';
import { endRun } from './run-end.js';
import { workspaceOf } from './run-workspace.js';
import type { Scope } from '../workflow/evaluate.js';
import type { Accounting } from './ceilings/accounting.js';
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
import type { TurnHost } from './turn-runner.js';
import { Scheduler } from './scheduler.js';
import { turnHostOf } from './run-turn-host.js';
import { QueueModes } from './queue-modes.js';
import { Reservations } from './ceilings/reservation.js';
import { layoutFields, promptLayoutOf, type PromptLayout } from './prompt-cache/prompt-layout.js';
import { PeopleVotes } from './people-votes.js';
import { TrustPolicy } from './trust/trust.js';
import { Taints } from './trust/taints.js';
import { estimateGate } from './estimate/estimate-gate.js';
import type { ProviderName } from '../provider/clouds.js';
import { channelReactions } from './channel-reactions.js';
import { scoreRubrics } from './rubric-scores.js';
import type { Ending } from './ending.js';

/**
 * A run (docs/design.md: turns, ending): its parts made and set up, its turns scheduled
 * (scheduler.ts) until it ends, and its end recorded (run-end.ts).
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
  private readonly scheduler: Scheduler;
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
  /** The rubric graders' calls, made once the team has stopped (rubric-scores.ts): a signal stops them too. */
  private readonly scoring = new AbortController();
  /** How the run ends instead, when its rubric graders could not be answered from its recording. */
  private scored: Ending | undefined;

  /** How the run's prompts are laid out for the prompt cache. */
  private readonly layout: PromptLayout;
  /** Who has read text from outside the team, and where text comes from (taints.ts, trust.ts). */
  private readonly taints: Taints;
  /** Proposals that wait for people's votes (people-votes.ts). */
  private readonly people: PeopleVotes;

  constructor(private readonly options: RunOptions) {
    this.progress = new RunProgress(options);
    this.layout = promptLayoutOf(options.workflow, options.park === true, options.recording.journal.recorded);
    // Every call, wait and tool listens to the run's signal: many at once is the design, not a leak.
    setMaxListeners(0, this.controller.signal);
    this.queues = new QueueModes(options.recording.journal);
    const allowed = options.workflow.spec.untrusted === 'allow';
    this.taints = new Taints(new TrustPolicy(options.workflow.spec, options.trust), options.recording.journal, allowed, this.progress.tell);
    this.people = new PeopleVotes(() => this.team!.channel, options.recording.journal, options.people, this.progress, this.controller.signal);
    const scheduler = (this.scheduler = new Scheduler({
      controller: this.controller,
      journal: options.recording.journal,
      turns: this.turns,
      people: this.people,
      concurrency: () => this.limits.current.concurrency,
      team: () => this.team!,
      turnHost: () => this.turnHost,
      parksForPeople: options.park === true || options.replay === true,
      // The turns left may all wait for batches now: park without waiting for their next poll.
      afterTurn: () => this.parkIfStuck(),
    }));
    this.limits = new RunLimits(options.recording, { timeout: (end) => scheduler.stop(end), change: () => this.reservations.wake() });
    ({ accounting: this.accounting, calls: this.calls } = runCalls(options, {
      cacheTtl: this.layout.cacheTtl,
      signal: this.controller.signal,
      reservations: this.reservations,
      limits: () => this.limits.current,
      progress: this.progress.tell,
      spawner: () => this.team?.spawner,
      profile: (agent) => this.agents.profiles.get(agent),
      batchesChanged: () => scheduler.step(() => this.parkIfStuck()),
      onBatchWait: (agent, waiting) => scheduler.step(() => scheduler.batchWait(agent, waiting)),
    }));
    this.workspace = workspaceOf(options);
    options.recording.journal.listen({
      onLive: () => {
        options.recording.onLive?.();
        this.limits.goLive(options.recording.journal);
      },
      onLimits: (limits) => this.limits.replayed(limits),
      onAbandoned: (e) => this.accounting.recordAbandoned(e.agent, e.input_tokens, e.cost_usd, false),
      onStall: (error) => scheduler.fail(error),
    });
  }

  async start(): Promise<RunResult> {
    const { workflow } = this.options;
    const { journal } = this.options.recording;
    const { scheduler } = this;
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
      if (!scheduler.ending) {
        const team = assembleTeam(this.options, scope, this.tools.mcp, this.layout, this.taints.policy, {
          register: (p: AgentProfile, m?: MessageParam[]) => this.addAgent(p, m),
          profile: (a: string) => this.agents.profile(a),
          spent: (a: string) => this.accounting.of(a).costUsd,
          record: (event) => journal.append(event),
          profiles: this.agents.profiles,
          running: scheduler.running,
          hasTurnsLeft: (n) => this.turns.hasTurnsLeft(n),
          onChannelEvent: channelReactions({ journal, people: this.people, taints: this.taints, queues: this.queues }),
          onProposalClosed: this.progress.proposal,
          warn: (message) => this.progress.tell({ type: 'warning', message }),
        });
        this.team = team;
        const price = (model: string, provider: ProviderName, batch: boolean) => this.accounting.priceOf(model, provider, batch);
        const over = await estimateGate(this.options, { limits: this.limits.current, team, scope, price, signal: this.controller.signal });
        if (over) scheduler.stop(over);
      }
      if (!scheduler.ending) {
        this.firstTexts = await openDocuments(workflow, scope, this.workspace, journal, this.team!.channel);
        this.taints.documentsOpened(workflow, this.agents.profiles.keys());
        this.team!.channel.postKickoff(this.taints.kickoff(workflow.templates.get('kickoff')!, scope));
        scheduler.pump();
      }
    } catch (e) {
      scheduler.fail(e);
    }
    scheduler.settle();
    await scheduler.done;
    // A batch being created when the run stopped is noted (and cancelled) before the session closes.
    await this.calls.batches?.settled();
    const parts = { calls: this.calls, journal, channel: this.team?.channel, progress: this.progress.tell, signal: this.scoring.signal };
    this.scored = await scoreRubrics(workflow, scheduler.ending!, parts);
    await this.tools.mcp?.close();
    this.limits.stop();
    journal.close();
    return this.finish(scope);
  }

  /** --park: when every turn that runs waits for a message batch, the run parks (parking.ts). */
  private parkIfStuck(): void {
    const { scheduler } = this;
    const parks = this.options.park && !scheduler.ending ? parkingStop(this.calls.batches, scheduler.running.size) : undefined;
    if (parks) scheduler.stop(...parks);
  }

  private addAgent(profile: AgentProfile, messages?: MessageParam[]): void {
    this.agents.add(profile, messages);
    this.turns.add(profile.name);
    this.taints.joined(profile);
  }

  /** SIGINT or SIGTERM: in-flight calls are aborted and the run ends with 130 or 143 (what becomes of its batches: parking.ts). */
  interrupt(signal: 'SIGINT' | 'SIGTERM'): void {
    const { scheduler } = this;
    this.scoring.abort();
    scheduler.step(() => scheduler.ending || scheduler.stop(...interruptedStop(signal, this.calls.batches)));
  }

  /** What a turn needs of the run (turn-runner.ts): made once, when the first turn starts, when the team and the tools are set. */
  private get turnHost(): TurnHost {
    const { queues, calls, accounting, workspace, tools, agents, taints, scheduler } = this;
    this.host ??= turnHostOf(
      this.options,
      this.team!,
      this.progress,
      { queues, calls, accounting, workspace, tools, agents, taints, signal: this.controller.signal },
      {
        statusLine: (turn) => this.limits.statusLine(turn, this.turns.team),
        ending: () => scheduler.ending !== undefined,
        elapsedMs: () => (this.options.recording.elapsedBeforeMs ?? 0) + Date.now() - this.startedAt,
        pump: () => scheduler.pump(),
      },
    );
    return this.host;
  }

  private finish(scope: Scope | undefined): RunResult {
    const { team, agents, turns, accounting, calls, limits, people, workspace, firstTexts } = this;
    return endRun(this.options, this.scored ?? this.scheduler.ending!, scope, {
      team,
      agents,
      turns,
      accounting,
      calls,
      limits,
      people,
      workspace,
      firstTexts,
    });
  }
}
