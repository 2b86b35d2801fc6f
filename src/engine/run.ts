import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type { AgentProfile } from '../agents/profile.js';
import { Workspace } from '../agents/tools/workspace-root.js';
import { runTurn, type TurnHooks } from '../agents/turn.js';
import { Channel, type ProposalView } from '../channel/channel.js';
import type { ModelRequest, ModelResponse, RetryListener } from '../provider/client.js';
import type { ResponseCache } from '../session/cache.js';
import { CallAborted, ProviderError } from '../provider/errors.js';
import { NO_USAGE, totalTokens, type TokenUsage } from '../provider/pricing.js';
import { requestHash } from '../provider/request-hash.js';
import { shellQuote, type Scope } from '../workflow/evaluate.js';
import { fillTemplate, UnresolvedValueError } from '../workflow/fill.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { Accounting, type Spend } from './accounting.js';
import type { ProgressListener } from './events.js';
import { inputEnvName } from './inputs.js';
import { DivergenceError, type Journal } from './journal.js';
import { buildProfiles } from './profiles.js';
import { runSetupStep, SetupError } from './setup.js';

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
  callModel(request: ModelRequest, signal: AbortSignal, onRetry: RetryListener): Promise<ModelResponse>;
  /** Where events go; when resuming or replaying, also where recorded answers come from. */
  journal: Journal;
  /** False for --replay and --offline: a model call nothing recorded or cached can answer fails the run instead of reaching the network. */
  liveCalls?: boolean;
  /** Responses kept across runs (--cache): a hit costs nothing and calls no one. */
  cache?: ResponseCache;
  /** Time the run had already used before it was resumed, for limits.timeout. */
  elapsedBeforeMs?: number;
  progress: ProgressListener;
}

/** How a run ended; DESIGN §4 maps each to its exit code. */
export type EndStatus = 'success' | 'failure' | 'idle' | 'limit' | 'provider_error' | 'error' | 'interrupted';

export interface RunResult {
  status: EndStatus;
  exitCode: number;
  /** Why it ended, in a sentence. */
  reason: string;
  /** The lead's summary from `complete`, or empty. */
  summary: string;
  outputs: Record<string, string>;
  /** Outputs whose values could not be evaluated, with where and why. */
  outputErrors: string[];
  usage: Spend;
  agents: Record<string, { turns: number; spend: Spend }>;
  proposals: ProposalView[];
}

/** A spending or turn limit stopped a model call. */
class LimitReached extends Error {}

/** --replay or --offline needed a model response that neither the session nor the cache holds. */
class NoRecordedAnswer extends Error {}

interface Ending {
  status: EndStatus;
  exitCode: number;
  reason: string;
  summary: string;
}

export function runWorkflow(options: RunOptions): Promise<RunResult> {
  return new Run(options).start();
}

/**
 * The scheduler (DESIGN §3, §4): turns for agents with unread messages, up to `concurrency` at
 * once, with managers' fan-in; limits; and the end of the run, noticed the moment nothing is
 * left to do. Every decision is made when something changes, never on a timer.
 */
export class Run {
  private readonly controller = new AbortController();
  private readonly limits;
  private readonly accounting: Accounting;
  private readonly profiles = new Map<string, AgentProfile>();
  private readonly conversations = new Map<string, MessageParam[]>();
  private readonly turns = new Map<string, number>();
  private readonly running = new Set<string>();
  private readonly reminded = new Set<string>();
  /** Proposals whose end was already shown. */
  private readonly reported = new Set<string>();
  private channel: Channel | undefined;
  private workspace: Workspace;
  private toolEnv: NodeJS.ProcessEnv;
  private teamTurns = 0;
  private readonly startedAt = Date.now();
  private readonly lastRequests = new Map<string, { system: unknown; tools: unknown; count: number }>();
  private ending: Ending | undefined;
  private settled!: () => void;
  private readonly done = new Promise<void>((resolve) => (this.settled = resolve));

  constructor(private readonly options: RunOptions) {
    this.limits = options.workflow.limits;
    this.accounting = new Accounting(this.limits, options.workflow.spec.pricing, (model) =>
      this.progress({ type: 'warning', message: `the price table does not know model "${model}": its cost is estimated at the highest price, $15 / $75 per million tokens; set pricing: in the workflow` }),
    );
    this.workspace = new Workspace(options.workspace);
    this.toolEnv = options.env;
  }

  async start(): Promise<RunResult> {
    const { journal, workflow } = this.options;
    const left = Math.max(0, this.limits.timeoutMs - (this.options.elapsedBeforeMs ?? 0));
    const timer = setTimeout(() => this.stop('limit', 3, `limit reached: timeout (${describeMs(this.limits.timeoutMs)})`), left);
    let scope: Scope | undefined;
    try {
      journal.append({ type: 'run_started', workflow: workflow.spec.name, limits: { ...this.limits, maxTokensTotal: finite(this.limits.maxTokensTotal) } });
      scope = await this.setup();
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
      if (e instanceof SetupError || e instanceof UnresolvedValueError) this.stop('error', 1, e.message);
      else if (e instanceof DivergenceError) this.stop('error', 1, e.message);
      else if (!(e instanceof CallAborted)) throw e;
    }
    this.settle();
    await this.done;
    clearTimeout(timer);
    return this.finish(scope);
  }

  /** SIGINT or SIGTERM: in-flight calls are aborted and the run ends with 130 or 143. */
  interrupt(signal: 'SIGINT' | 'SIGTERM'): void {
    this.stop('interrupted', signal === 'SIGINT' ? 130 : 143, `interrupted by ${signal}`);
  }

  // --- setup ---------------------------------------------------------------------------------

  private async setup(): Promise<Scope> {
    const { workflow, inputs, runId, sessionPath, env, journal } = this.options;
    const base: Scope = { inputs, workflow: { name: workflow.spec.name, file: workflow.file }, run: { id: runId, session: sessionPath } };
    const declared: Record<string, string> = {};
    for (const [key, value] of Object.entries(workflow.spec.env ?? {})) {
      const template = workflow.templates.get(`env.${key}`);
      declared[key] = template ? fillTemplate(template, base) : String(value);
    }
    const inputEnv = Object.fromEntries(Object.entries(inputs).map(([name, value]) => [inputEnvName(name), String(value)]));
    this.toolEnv = { ...env, ...declared };
    const shellEnv = { ...env, ...declared, ...inputEnv };
    const envScope = { ...stringsOf(env), ...declared };
    const outputs: Record<string, string> = {};
    for (const [i, step] of (workflow.spec.setup ?? []).entries()) {
      if (this.ending) break;
      const command = fillTemplate(workflow.templates.get(`setup[${i}].run`)!, { ...base, env: envScope, setup: outputs }, shellQuote);
      const recorded = journal.setupOutput(step.id, this.controller.signal);
      if (recorded) {
        outputs[step.id] = String((await recorded).stdout);
      } else {
        await journal.live(this.controller.signal);
        this.progress({ type: 'setup', id: step.id, state: 'running' });
        try {
          outputs[step.id] = await runSetupStep(step, command, shellEnv, this.workspace.root, this.controller.signal);
        } catch (e) {
          this.progress({ type: 'setup', id: step.id, state: 'failed' });
          if (!this.ending) journal.append({ type: 'setup_failed', id: step.id, error: (e as Error).message });
          throw e;
        }
        this.progress({ type: 'setup', id: step.id, state: 'done' });
      }
      journal.append({ type: 'setup_finished', id: step.id, stdout: outputs[step.id] });
    }
    return { ...base, env: envScope, setup: outputs };
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
      if (this.teamTurns >= this.limits.maxTurns) return this.stop('limit', 3, `limit reached: max_turns (${this.limits.maxTurns} turns for the team)`);
      const capped = wanting.map((n) => `@${n}`).join(', ');
      return this.stop('limit', 3, `limit reached: max_turns_per_agent (${this.limits.maxTurnsPerAgent}) for ${capped}, who still ${wanting.length === 1 ? 'has' : 'have'} messages to handle`);
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
    this.stop('idle', 0, 'ended idle: no agent has anything left to do');
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
    const profile = this.profiles.get(name)!;
    const delivery = channel.deliver(name);
    const spentBefore = this.accounting.of(name);
    try {
      journal.append({ type: 'turn_started', agent: name, turn, through: delivery.through, messages: delivery.messages.map((m) => m.id) });
      this.progress({ type: 'turn_started', agent: name, turn, messages: delivery.messages.length });
      const outcome = await runTurn(
        profile,
        this.conversations.get(name)!,
        delivery.messages,
        this.statusLine(turn),
        { agent: name, channel, workspace: this.workspace, env: this.toolEnv, signal: this.controller.signal },
        this.hooks(name, turn),
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
        this.stop(status, status === 'success' ? 0 : 1, `@${name} completed the run with ${status}`, summary);
      }
    } catch (e) {
      channel.release(delivery);
      if (this.ending || e instanceof CallAborted) return;
      const message = e instanceof Error ? e.message : String(e);
      if (e instanceof DivergenceError) return this.stop('error', 1, message);
      if (e instanceof NoRecordedAnswer) return this.stop('error', 1, message);
      try {
        journal.append({ type: 'turn_failed', agent: name, turn, error: message });
      } catch (divergence) {
        return this.stop('error', 1, (divergence as Error).message);
      }
      this.progress({ type: 'turn_failed', agent: name, turn, error: message });
      if (e instanceof LimitReached) return this.stop('limit', 3, message);
      if (e instanceof ProviderError) {
        const provider = e.kind !== 'request';
        return this.stop(provider ? 'provider_error' : 'error', provider ? 4 : 1, `@${name} failed: ${message}`);
      }
      this.stop('error', 1, `@${name} failed: ${e instanceof Error ? (e.stack ?? message) : message}`);
    }
  }

  private hooks(name: string, turn: number): TurnHooks {
    const { journal, callModel } = this.options;
    const signal = this.controller.signal;
    return {
      call: async (request, step) => {
        if (this.ending) throw new CallAborted();
        const over = this.accounting.exceeded();
        if (over) throw new LimitReached(`limit reached: ${over.limit} (${over.detail})`);
        let response: ModelResponse;
        let hash: string;
        let cached = false;
        const recorded = journal.response(name, turn, step, signal);
        if (recorded) {
          this.progress({ type: 'thinking', agent: name, step });
          const event = await recorded;
          response = event.response as ModelResponse;
          cached = event.cached === true;
          // The recorded request delta, compared with this call's, verifies the request: no need to hash it again.
          hash = String(event.request_sha256);
        } else {
          await journal.live(signal);
          hash = requestHash(request);
          const hit = await this.options.cache?.get(hash);
          if (hit) {
            response = hit;
            cached = true;
          } else if (this.options.liveCalls === false) {
            throw new NoRecordedAnswer(
              this.options.cache
                ? `offline: the cache holds no response for @${name}'s turn ${turn}, call ${step} (request ${hash.slice(0, 12)}); run without --offline to fill it`
                : `the session holds no response for @${name}'s turn ${turn}, call ${step}: this run asked for more than was recorded`,
            );
          } else {
            this.progress({ type: 'thinking', agent: name, step });
            response = await callModel(request, signal, (error, waitMs) => this.progress({ type: 'retry', agent: name, error, waitMs }));
            await this.options.cache?.set(hash, response);
          }
        }
        const spend = cached ? { costUsd: 0 } : this.accounting.record(name, request.model, usageOf(response.usage));
        journal.append({
          type: 'model_call',
          agent: name,
          turn,
          step,
          request: this.requestDelta(name, request),
          request_sha256: hash,
          response,
          cost_usd: spend.costUsd,
          ...(cached ? { cached: true } : {}),
        });
        return response;
      },
      toolStarted: async (use) => {
        if (!journal.hasToolCall(use.id)) await journal.live(signal);
        journal.append({ type: 'tool_call', agent: name, turn, tool: use.name, tool_use_id: use.id, input: use.input });
        this.progress({ type: 'tool', agent: name, tool: use.name });
      },
      external: async (use, readOnly, run) => {
        const recorded = journal.toolResult(use.id, signal);
        if (recorded) {
          const event = await recorded;
          return { content: String(event.content), isError: event.is_error === true };
        }
        const interrupted = journal.hasToolCall(use.id);
        await journal.live(signal);
        if (interrupted && !readOnly) {
          return {
            content: `The outcome of this ${use.name} call is unknown: conclave was stopped while it ran, and it was not run again because it may have changed something. Check its effect before you repeat it.`,
            isError: true,
          };
        }
        return run();
      },
      toolFinished: (use, result) =>
        journal.append({ type: 'tool_result', agent: name, turn, tool: use.name, tool_use_id: use.id, content: result.content, is_error: result.isError ?? false }),
    };
  }

  /**
   * What a model call asked, as the session keeps it: the system prompt and tools when they
   * change, and the messages added since the agent's previous call (from its last one, which
   * gains a cache mark), so that a replay can show where a request differs.
   */
  private requestDelta(name: string, request: ModelRequest) {
    // An agent's system blocks and tools are the same objects call after call (agents/turn.ts).
    const previous = this.lastRequests.get(name);
    const from = previous ? Math.max(0, previous.count - 1) : 0;
    this.lastRequests.set(name, { system: request.system, tools: request.tools, count: request.messages.length });
    return {
      model: request.model,
      max_tokens: request.max_tokens,
      ...(request.system !== previous?.system ? { system: (request.system as { text: string }[]).map((b) => b.text).join('\n') } : {}),
      ...(request.tools !== previous?.tools ? { tools: (request.tools ?? []).map((t) => ('name' in t ? t.name : t.type)) } : {}),
      messages_from: from,
      messages: request.messages.slice(from),
    };
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

  private stop(status: EndStatus, exitCode: number, reason: string, summary = ''): void {
    if (this.ending) return;
    this.ending = { status, exitCode, reason, summary };
    this.controller.abort();
    this.settle();
  }

  private settle(): void {
    if (this.ending && this.running.size === 0) this.settled();
  }

  private finish(scope: Scope | undefined): RunResult {
    const { workflow, journal } = this.options;
    const ending = this.ending!;
    const channel = this.channel;
    const agents = Object.fromEntries([...this.profiles.keys()].map((n) => [n, { turns: this.turns.get(n)!, spend: this.accounting.of(n) }]));
    const proposals = channel?.allProposals() ?? [];
    const outputs: Record<string, string> = {};
    const outputErrors: string[] = [];
    if (scope) {
      const total = this.accounting.total;
      const final: Scope = {
        ...scope,
        result: { status: ending.status, summary: ending.summary },
        agents: Object.fromEntries(
          [...this.profiles.keys()].map((n) => [n, { last_message: channel?.lastMessageFrom(n)?.text ?? '', turns: this.turns.get(n)! }]),
        ),
        proposals: Object.fromEntries(proposals.map((p) => [p.id, { question: p.question, status: p.status, winner: p.winner, tally: p.tally }])),
        usage: { input_tokens: total.usage.input_tokens, output_tokens: total.usage.output_tokens, cost_usd: Number(total.costUsd.toFixed(6)) },
      };
      for (const [key, template] of workflow.templates) {
        if (template.field !== 'outputs') continue;
        try {
          outputs[key.slice('outputs.'.length)] = fillTemplate(template, final);
        } catch (e) {
          if (!(e instanceof UnresolvedValueError)) throw e;
          outputErrors.push(e.message);
        }
      }
    }
    const exitCode = ending.exitCode === 0 && outputErrors.length > 0 ? 1 : ending.exitCode;
    const result: RunResult = { ...ending, exitCode, outputs, outputErrors, usage: this.accounting.total, agents, proposals };
    // A run stopped while it re-executed its recording, or that diverged from it, adds nothing:
    // the session stays as it was, and can be resumed again.
    if (!journal.replaying && !journal.diverged) {
      journal.append({ type: 'run_ended', status: result.status, exit_code: exitCode, reason: result.reason, summary: result.summary, outputs, output_errors: outputErrors, usage: result.usage });
      journal.sync();
    }
    return result;
  }
}

function usageOf(usage: ModelResponse['usage'] | undefined): TokenUsage {
  if (!usage) return NO_USAGE;
  return {
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
  };
}

function stringsOf(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function finite(n: number): number | null {
  return Number.isFinite(n) ? n : null;
}

function describeMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
