import type { Workspace } from '../agents/tools/workspace-root.js';
import { runTurn } from '../agents/turn.js';
import type { Channel, ProposalView } from '../channel/channel.js';
import { totalTokens } from '../provider/pricing.js';
import { ProviderError } from '../provider/provider-errors.js';
import type { Accounting } from './ceilings/accounting.js';
import type { AgentTable } from './agent-table.js';
import { compactionHook } from './calls/compactions.js';
import { ending, endingOfError, type Ending } from './ending.js';
import type { Journal } from './replay/journal.js';
import type { ModelCalls } from './calls/model-calls.js';
import type { ProgressListener } from './progress-events.js';
import type { QueueModes } from './queue-modes.js';
import { afterRefusal, noticeEvent } from './calls/refusal.js';
import type { RunOptions } from './run-options.js';
import type { ToolSetup } from './setup.js';
import { SpawnBudgetReached, type Spawner } from './teams/spawner.js';
import { toolHooks } from './tool-calls.js';
import type { Taints } from './trust/taints.js';
import type { Shown } from '../agents/tools/tool.js';
import { baseEnvironment } from '../agents/tools/tool-env.js';

/**
 * How a turn ended, as a value the scheduler applies (Run.apply): a turn never throws. `stop`
 * when the run must end (the lead completed, a refusal, a failure that is not only a spawned
 * agent's, a session that cannot be written); nothing to apply otherwise (the turn handled its
 * messages, or gave them back because the run is ending or its agent was ended).
 */
export interface TurnEnd {
  stop?: Ending;
}

/** What a turn needs of its run. */
export interface TurnHost {
  journal: Journal;
  channel: Channel;
  spawner: Spawner;
  queues: QueueModes;
  calls: ModelCalls;
  accounting: Accounting;
  workspace: Workspace;
  tools: ToolSetup;
  elsewhere: RunOptions['place']['elsewhere'];
  agents: AgentTable;
  /** The status line the turn's first message begins with. */
  statusLine(turn: number): string;
  /** The run's signal, which the agent's own is made from. */
  signal: AbortSignal;
  /** Whether the run is ending: a turn that ends now hands its messages back. */
  ending(): boolean;
  elapsedMs(): number;
  progress: ProgressListener;
  reportProposal(p: ProposalView): void;
  /** Something changed that may let another turn start (a spawn). */
  pump(): void;
  /** Who has read untrusted text: their writes outside the run are gated, their commands get no secret (taints.ts). */
  taints: Taints;
}

/** One turn of `name`: its messages delivered, the model and tools run, its answer posted; how it ended. */
export async function takeTurn(host: TurnHost, name: string, turn: number): Promise<TurnEnd> {
  const { journal, channel, spawner } = host;
  const signal = spawner.signalOf(name, host.signal);
  const profile = host.agents.profile(name);
  const arrivals = host.queues.open(channel, name, profile.queue, turn, signal);
  const { delivery } = arrivals;
  const spentBefore = host.accounting.of(name);
  const remote = host.elsewhere?.open(name, turn, host.tools.declared ?? {}),
    via = { via: remote?.call };
  let handled = false;
  try {
    journal.append({ type: 'turn_started', agent: name, turn, through: delivery.through, messages: delivery.messages.map((m) => m.id) });
    host.progress({ type: 'turn_started', agent: name, turn, messages: delivery.messages.length });
    const outcome = await runTurn(profile, host.agents.conversation(name), delivery.messages, host.statusLine(turn), toolContext(host, name, signal), {
      call: (request, call) => arrivals.call((interrupt) => host.calls.call(name, turn, call, request, signal, { ...via, interrupt })),
      compacted: compactionHook(journal, name, turn, host.progress, () => host.calls.lastCostOf(name)),
      ...toolHooks(journal, name, turn, signal, host.progress, remote, {
        refusal: (use, readOnly) => host.taints.refusal(name, use, readOnly, channel),
        read: (tool) => host.taints.read(name, tool),
      }),
      notice: (n) => host.progress(noticeEvent(name, n)),
      ...(arrivals.steer ? { steer: arrivals.steer } : {}),
    });
    if (host.ending() || spawner.isEnded(name)) {
      channel.release(name);
      return {};
    }
    host.agents.keepConversation(name, outcome.conversation);
    const posted = outcome.text ? channel.post(name, outcome.text).message : undefined;
    if (posted) host.progress({ type: 'posted', agent: name, recipients: posted.recipients, text: posted.text });
    channel.acknowledge(name);
    handled = true;
    channel.turnEnded(name);
    journal.append({ type: 'turn_ended', agent: name, turn, elapsed_ms: host.elapsedMs() });
    journal.sync();
    const spent = host.accounting.of(name);
    const costUsd = spent.costUsd - spentBefore.costUsd;
    const tokens = totalTokens(spent.usage) - totalTokens(spentBefore.usage);
    host.progress({ type: 'turn_ended', agent: name, turn, recipients: posted?.recipients ?? null, costUsd, tokens });
    for (const p of channel.allProposals()) if (p.status !== 'open') host.reportProposal(p);
    const refusal = outcome.refused ? afterRefusal(profile, turn, channel, outcome.refused) : undefined;
    if (refusal) return { stop: refusal };
    if (outcome.completion && profile.isLead) {
      const { status, summary, outputs } = outcome.completion;
      return { stop: { ...ending(status, status === 'success' ? `@${name} completed the run` : `@${name} ended the run with failure`, summary), outputs } };
    }
    return {};
  } catch (e) {
    return failed(host, name, turn, e, handled);
  } finally {
    remote?.close();
  }
}

/**
 * What a turn's tools are given. Its environment is read at each tool call: once the agent has
 * read untrusted text (or when the workspace is a stranger's code), its commands get only the
 * minimal base, whatever the workflow gave them.
 */
function toolContext(host: TurnHost, name: string, signal: AbortSignal) {
  const context = {
    agent: name,
    channel: host.channel,
    workspace: host.workspace,
    ...host.tools,
    signal,
    ...host.spawner.toolsFor(name, () => host.pump()),
    shown: (what: Shown) => host.taints.shown(name, what),
  };
  const { env } = host.tools;
  return Object.defineProperty(context, 'env', { enumerable: true, get: () => (host.taints.stripsEnv(name) ? baseEnvironment(env) : env) });
}

/**
 * A turn that threw: a spawned agent's failure ends that agent (recorded); any other stops the
 * run, recorded as `turn_failed` unless the run left its recording. What fails again while this
 * is written (a full disk, a divergence) stops the run too: nothing escapes.
 */
function failed(host: TurnHost, name: string, turn: number, e: unknown, handled: boolean): TurnEnd {
  const { journal, channel, spawner } = host;
  try {
    if (!handled) channel.release(name);
    if (spawner.isEnded(name)) return {}; // cancelled: its turn was aborted on purpose
    const end = host.ending() ? undefined : endingOfError(e, name);
    if (!end) return {};
    const error = e instanceof Error ? e.message : String(e);
    if (
      e instanceof SpawnBudgetReached
        ? spawner.end(name, 'limit', error)
        : (end.status === 'error' || end.status === 'provider_error') && spawner.end(name, 'failed', `failed: ${error}`)
    )
      return {};
    if (!journal.diverged) {
      const call = e instanceof ProviderError && e.call ? { call: { ...e.call, kind: e.kind, status: e.status ?? null } } : {};
      journal.append({ type: 'turn_failed', agent: name, turn, error, ...call });
      host.progress({ type: 'turn_failed', agent: name, turn, error });
    }
    return { stop: end };
  } catch (again) {
    return { stop: endingOfError(again, name) ?? endingOfError(e, name) ?? ending('error', String(again)) };
  }
}
