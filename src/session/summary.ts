import { ballotsOf, type Ballot } from './ballot.js';
import { FINISHED } from './recording.js';
import type { EventOf, SessionEvent, SessionHeader } from './format.js';
import type { SessionRecord } from './reader.js';
import { isObject } from './schema.js';
import { timelineOf, type Timeline } from './timeline.js';
import { DocumentHistories, type DocumentSummary } from './document-history.js';
import { BATCH_PRICE, listCacheSavingUsd } from '../provider/pricing.js';
import { findingOf, type Finding } from './findings.js';
import { parkedTime } from './parked-time.js';
import type { CacheTtl } from '../provider/pricing.js';

export type { DocumentStep, DocumentSummary } from './document-history.js';

export interface TranscriptMessage {
  id: number;
  kind: string;
  sender: string;
  recipients: string[];
  text: string;
}

import { ProposalHistories, type ProposalSummary } from './proposal-history.js';
import { type CacheMiss, cacheMissOf } from './cache-misses.js';

export type { ProposalSummary } from './proposal-history.js';

export interface AgentUsage {
  turns: number;
  calls: number;
  /** Of its calls, those a message batch answered. */
  batched_calls: number;
  tools: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cost_usd: number;
}

export type { Finding } from './findings.js';

/** An agent's conversation kept within its compact_at (docs/design.md: context). */
export interface CompactionSummary {
  agent: string;
  turn: number;
  reason: string;
  tokens_before: number;
  tokens_after: number;
  cleared: number;
  summary: string | null;
}

/** An agent spawned at run time: from which template, by whom, how deep, and how it ended if it was cancelled. */
export interface SpawnedAgent {
  template: string;
  parent: string;
  depth: number;
  ended: string | null;
}

/** A spend pool the run's live calls drew from (docs/organisation.md), and what they cost. */
export interface PoolDraw {
  name: string;
  cap_usd: number;
  per: string;
  drawn_usd: number;
}

export interface SessionSummary {
  header: SessionHeader;
  pools: PoolDraw[];
  /** Calls that waited for the API's rate limits, and how long in all. */
  paced: { calls: number; ms: number };
  /** Model calls and their cost by provider (docs/providers.md), in the order first used. */
  providers: Record<string, { calls: number; cost_usd: number }>;
  /** Tokens read from the prompt cache and written to it, and what it saved against no cache (list prices; negative: it cost more). */
  cache: { read_tokens: number; written_tokens: number; saved_usd: number };
  /**
   * Calls answered through the Message Batches API, what the batch price saved against the same
   * calls one by one, and how often the run parked and how long it waited between its processes.
   */
  batches: { calls: number; saved_usd: number; parked: number; parked_ms: number };
  /** A bar per turn and per wait, by agent (docs/traces.md). */
  timeline: Timeline;
  /** The agents spawned at run time, in the order they were spawned. */
  spawned: Record<string, SpawnedAgent>;
  messages: TranscriptMessage[];
  findings: Finding[];
  compactions: CompactionSummary[];
  proposals: ProposalSummary[];
  /** The proposals that wait for people's votes, as ballots (docs/github-action.md: votes from people). */
  ballots: Ballot[];
  /** The agents that read text from outside the team, and how (docs/security.md: untrusted content). */
  tainted: Record<string, string>;
  documents: DocumentSummary[];
  agents: Record<string, AgentUsage>;
  total: AgentUsage;
  /** What the run was estimated to cost before its first call (docs/pricing.md: before a run), if it was. */
  estimate?: EventOf<'estimate'>;
  /** The prompt-cache misses the API diagnosed (docs/pricing.md: cache misses), in the order they came. */
  cache_misses: CacheMiss[];
  /** Calls a server-side fallback answered, by agent and the model that answered (docs/api-controls.md). */
  fallbacks: { agent: string; model: string; calls: number }[];
  /** The run_ended event, if the run ended. */
  end?: { status: string; exit_code: number; reason: string; summary: string; outputs: Record<string, string> };
}

/** An agent that used nothing. */
export const NO_AGENT_USAGE: AgentUsage = {
  turns: 0,
  calls: 0,
  batched_calls: 0,
  tools: 0,
  input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
  cost_usd: 0,
};

/** What a session says happened: the transcript, the proposals, usage and cost, and the end. */
export function summarize(record: Pick<SessionRecord, 'header' | 'events' | 'effective'>): SessionSummary {
  const messages: TranscriptMessage[] = [];
  const compactions: CompactionSummary[] = [];
  const findings: Finding[] = [];
  const annotations = new Map<string, Record<string, unknown>>();
  const proposals = new ProposalHistories();
  const documents = new DocumentHistories();
  const agents: Record<string, AgentUsage> = {};
  const spawned: Record<string, SpawnedAgent> = {};
  const usage = (agent: string) => (agents[agent] ??= { ...NO_AGENT_USAGE });
  let end: SessionSummary['end'];
  let estimate: EventOf<'estimate'> | undefined;
  const pools = new Map<string, PoolDraw>();
  /** The pools the calls that follow draw from: from a `spend_pools` note to the next `resumed`. */
  let drawing: PoolDraw[] = [];
  const paced = { calls: 0, ms: 0 };
  const providers: SessionSummary['providers'] = {};
  const cache = { read_tokens: 0, written_tokens: 0, saved_usd: 0 };
  const batches = { calls: 0, saved_usd: 0, ...parkedTime(record.events) };
  let cacheTtl: CacheTtl = '5m';
  const models = new Map<string, string>();
  const tainted: Record<string, string> = {};
  const cacheMisses: CacheMiss[] = [];
  const fallbacks = new Map<string, { agent: string; model: string; calls: number }>();
  for (const e of record.effective) apply(e);
  const total = Object.values(agents).reduce((sum, a) => add(sum, a), { ...NO_AGENT_USAGE });
  return {
    header: record.header,
    pools: [...pools.values()],
    paced,
    providers,
    cache,
    batches,
    timeline: timelineOf(record.effective, record.events),
    spawned,
    messages,
    findings,
    compactions,
    proposals: proposals.all(),
    // A run that is over asks no one for a vote, whatever it left open.
    ballots: end && FINISHED.has(end.status) ? [] : ballotsOf(proposals.all(), { run: record.header.run_id, head: record.header.github?.head }),
    tainted,
    documents: documents.all(),
    agents,
    total,
    ...(estimate ? { estimate } : {}),
    cache_misses: cacheMisses,
    fallbacks: [...fallbacks.values()],
    end,
  };

  function apply(e: SessionEvent): void {
    switch (e.type) {
      case 'run_started':
        cacheTtl = e.cache_ttl ?? '5m';
        return;
      case 'message':
        messages.push(e.message);
        return;
      case 'proposal_opened':
      case 'human_vote':
      case 'vote':
      case 'proposal_closed':
        proposals.apply(e);
        return;
      case 'agent_tainted':
        tainted[e.agent] ??= e.why;
        return;
      case 'document_opened':
      case 'document_changed':
      case 'document_appended':
      case 'edit_proposed':
      case 'edit_closed':
        documents.apply(e);
        return;
      case 'turn_started':
        usage(e.agent).turns++;
        return;
      case 'agent_spawned':
        spawned[e.agent] = { template: e.template, parent: e.parent, depth: e.depth, ended: null };
        usage(e.agent);
        return;
      case 'agent_ended':
        if (spawned[e.agent] && e.status !== 'stopped') spawned[e.agent]!.ended = e.reason;
        return;
      case 'tool_call':
        usage(e.agent).tools++;
        if (!isObject(e.input)) return;
        if (e.tool === 'vote') proposals.voteCalled(e.agent, e.tool_use_id, e.input);
        if (e.tool === 'annotate') annotations.set(`${e.agent}/${e.tool_use_id}`, e.input);
        return;
      case 'tool_result': {
        const finding = annotations.get(`${e.agent}/${e.tool_use_id}`);
        if (finding && e.tool === 'annotate' && !e.is_error) findings.push(findingOf(e.agent, finding));
        if (e.is_error) proposals.voteRefused(e.tool_use_id, e.content);
        return;
      }
      case 'estimate':
        estimate = e;
        return;
      case 'spend_pools':
        drawing = e.pools.map((p) => (pools.get(p.name) ?? pools.set(p.name, { ...p, drawn_usd: 0 }).get(p.name))!);
        return;
      case 'resumed':
        drawing = [];
        return;
      case 'rate_waited':
        paced.calls++;
        paced.ms += e.waited_ms;
        return;
      case 'call_interrupted':
      case 'call_abandoned': {
        // A prompt that left and was paid for without an answer: counted as the run counted it.
        for (const pool of drawing) pool.drawn_usd += e.cost_usd;
        const u = usage(e.agent);
        u.calls++;
        u.cost_usd += e.cost_usd;
        if (e.type === 'call_abandoned') u.input_tokens += e.input_tokens;
        return;
      }
      case 'model_call': {
        for (const pool of drawing) pool.drawn_usd += e.cost_usd;
        const u = usage(e.agent);
        const r = e.response.usage ?? {};
        u.calls++;
        u.input_tokens += r.input_tokens ?? 0;
        u.output_tokens += r.output_tokens ?? 0;
        u.cache_read_input_tokens += r.cache_read_input_tokens ?? 0;
        u.cache_creation_input_tokens += r.cache_creation_input_tokens ?? 0;
        u.cost_usd += e.cost_usd;
        cacheMisses.push(...[cacheMissOf(e.agent, e.response)].filter((m) => m !== undefined));
        if (typeof e.request.model === 'string') models.set(e.agent, e.request.model);
        if (e.answered_by !== undefined) {
          const key = `${e.agent}\n${e.answered_by}`;
          (fallbacks.get(key) ?? fallbacks.set(key, { agent: e.agent, model: e.answered_by, calls: 0 }).get(key)!).calls++;
        }
        const read = r.cache_read_input_tokens ?? 0;
        const written = r.cache_creation_input_tokens ?? 0;
        cache.read_tokens += read;
        cache.written_tokens += written;
        cache.saved_usd += listCacheSavingUsd(r, e.answered_by ?? models.get(e.agent) ?? String((e.response as { model?: unknown }).model ?? ''), cacheTtl);
        if (e.batch !== undefined) {
          u.batched_calls++;
          batches.calls++;
          batches.saved_usd += e.cost_usd * (1 / BATCH_PRICE - 1);
        }
        const by = (providers[e.provider ?? 'anthropic'] ??= { calls: 0, cost_usd: 0 });
        by.calls++;
        by.cost_usd += e.cost_usd;
        return;
      }
      case 'context_compacted': {
        const { agent, turn, reason, tokens_before, tokens_after, cleared, summary } = e;
        compactions.push({ agent, turn, reason, tokens_before, tokens_after, cleared, summary });
        return;
      }
      case 'run_ended':
        end = { status: e.status, exit_code: e.exit_code, reason: e.reason, summary: e.summary, outputs: e.outputs };
        return;
    }
  }
}

function add(a: AgentUsage, b: AgentUsage): AgentUsage {
  const out = { ...a };
  for (const key of Object.keys(out) as (keyof AgentUsage)[]) out[key] = a[key] + b[key];
  return out;
}
