import type { AgentProfile } from '../../agents/profile.js';
import { request } from '../../agents/request.js';
import { CHARS_PER_TOKEN } from '../../agents/context.js';
import { MAX_TOOL_STEPS } from '../../agents/turn.js';
import type { ModelRequest } from '../../provider/messages.js';
import { FAST_PRICE, worstCaseCost, type Price } from '../../provider/pricing.js';
import { modelInfo } from '../../provider/models.js';
import { scaledPrice, type ProviderName } from '../../provider/clouds.js';
import type { Limits } from '../../workflow/limits.js';
import { likelyFromMessages, likelyFromSessions, type EstimateGroup, type FirstPrompt, type Likely } from './estimate-likely.js';

export type { EstimateGroup } from './estimate-likely.js';
import type { RecordedRun } from './estimate-history.js';

/**
 * The most model calls one turn can make: each of its MAX_TOOL_STEPS steps may compact the
 * conversation first (a summary call) and, refused as too long, compact and call again.
 */
export const CALLS_PER_TURN_AT_MOST = MAX_TOOL_STEPS * 4;

/** One row of an estimate: a declared agent (a `for_each` with all its instances), or a template with the instances it is expected to have. */
export interface EstimateRow {
  name: string;
  kind: 'agent' | 'for_each' | 'template';
  /** Instances: a for_each's items, a template's expected spawns; null when setup was skipped and the items are unknown (the row is per item). */
  instances: number | null;
  worst_usd: number;
  likely_usd: number;
  calls: number;
  /** Prompt tokens the likely run reads from or writes to the prompt cache. */
  cached_tokens: number;
  batched: boolean;
  /** How its prompts were counted: by the API's token-counting endpoint, or from their length. */
  counted: 'exact' | 'length';
  /** Where its turns come from: earlier sessions (`--from`), or one turn per message it will receive. */
  turns_from: 'sessions' | 'messages';
}

export interface Estimate {
  worst_usd: number;
  /** What bounds the worst case: the run's budget, or its turns, tokens and fan-out. */
  worst_bound: 'budget_usd' | 'max_tokens_total' | 'turns';
  likely_usd: number;
  /** Rows whose items are unknown: their figures are per item and not in the totals. */
  per_item_usd: number;
  sessions: number;
  agents: EstimateRow[];
}

export interface EstimateSources {
  limits: Limits;
  groups: readonly EstimateGroup[];
  /** The first message each agent gets: the kickoff for the lead. */
  firstMessage(profile: AgentProfile): string;
  /** The API's count of a request's input tokens, or undefined where its provider cannot count. */
  count(request: ModelRequest, provider: ProviderName): Promise<number | undefined>;
  price(model: string, provider: ProviderName, batch: boolean): Price;
  /** Earlier sessions of the workflow (`--from`). */
  history: readonly RecordedRun[];
}

/**
 * What a run will cost before it runs (docs/pricing.md: before a run): the worst case its limits
 * allow, never below what it can spend, and the likely cost from its prompts counted exactly,
 * the prompt cache, the batch price, and the turns of earlier sessions when there are any.
 */
export async function estimateRun(sources: EstimateSources): Promise<Estimate> {
  const { limits } = sources;
  const firsts = await firstPrompts(sources);
  const rows: EstimateRow[] = [];
  const written = new Set<string>();
  let worstSum = 0;
  for (const group of sources.groups) {
    const likely = group.profiles.map((p) => likelyOf(sources, group, p, firsts.get(p)!, written));
    const instances = group.kind === 'template' ? Math.max(...likely.map((l) => l.instances ?? 1)) : group.perItem ? null : group.profiles.length;
    const each = group.profiles.map((p) => worstOfAgent(sources, group, p));
    // A template's instances, and a for_each whose items are unknown, can be as many as limits.max_agents lets in.
    const groupWorst = group.kind === 'template' || group.perItem ? each[0]! * (group.atMost ?? 0) : each.reduce((a, b) => a + b, 0);
    worstSum += groupWorst;
    const sum = (f: (l: Likely) => number) => likely.reduce((a, l) => a + f(l), 0);
    rows.push({
      name: group.name,
      kind: group.kind,
      instances,
      worst_usd: Math.min(groupWorst, limits.budgetUsd),
      likely_usd: sum((l) => l.usd),
      calls: sum((l) => l.calls),
      cached_tokens: sum((l) => l.cachedTokens),
      batched: group.profiles.some((p) => p.batch),
      counted: group.profiles.every((p) => firsts.get(p)!.exact) ? 'exact' : 'length',
      turns_from: likely.every((l) => l.fromSessions) ? 'sessions' : 'messages',
    });
  }
  const tokensBound = Number.isFinite(limits.maxTokensTotal) ? limits.maxTokensTotal * dearestPerToken(sources) : Infinity;
  const worst = Math.min(limits.budgetUsd, tokensBound, worstSum);
  const counted = rows.filter((r) => r.instances !== null);
  return {
    worst_usd: worst,
    // Each agent's worst is already capped at the budget: a budget as low as the sum is what binds it.
    worst_bound: worst === limits.budgetUsd ? 'budget_usd' : worst === worstSum ? 'turns' : 'max_tokens_total',
    likely_usd: Math.min(
      worst,
      counted.reduce((a, r) => a + r.likely_usd, 0),
    ),
    per_item_usd: rows.filter((r) => r.instances === null).reduce((a, r) => a + r.likely_usd, 0),
    sessions: sources.history.length,
    agents: rows,
  };
}

/** A `for_each` has its first this many instances counted by the API; the others are scaled from their length by those counts. */
export const COUNTED_PER_GROUP = 8;

/**
 * Every agent's first request, counted by the API where its provider can count (a few requests at
 * a time, as the endpoint's own rate limit wants), else from its length (marked so).
 */
async function firstPrompts(sources: EstimateSources): Promise<Map<AgentProfile, FirstPrompt>> {
  const counted = new Map<AgentProfile, FirstPrompt>();
  const measure = (profile: AgentProfile) => {
    const first = request(profile, [{ role: 'user', content: [{ type: 'text', text: sources.firstMessage(profile) }] }]);
    const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
    const context = profile.system.length > 1 ? Buffer.byteLength(profile.system[0]!) : 0;
    return { first, bytes: bytes(first), shared: bytes(first.tools) + context };
  };
  const keep = (profile: AgentProfile, m: ReturnType<typeof measure>, tokens: number, exact: boolean) =>
    counted.set(profile, {
      tokens,
      exact,
      sharedTokens: Math.round((tokens * m.shared) / m.bytes),
      sharedKey: `${profile.model}\n${JSON.stringify(m.first.tools)}\n${profile.system.length > 1 ? profile.system[0] : ''}`,
    });
  const samples = sources.groups.flatMap((g) => g.profiles.slice(0, COUNTED_PER_GROUP));
  const queue = [...samples];
  const worker = async () => {
    for (let profile = queue.shift(); profile; profile = queue.shift()) {
      const m = measure(profile);
      const exact = await sources.count(m.first, profile.provider);
      keep(profile, m, exact ?? Math.ceil(m.bytes / CHARS_PER_TOKEN), exact !== undefined);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, samples.length) }, worker));
  for (const group of sources.groups) {
    const sample = group.profiles.slice(0, COUNTED_PER_GROUP).map((p) => ({ first: counted.get(p)!, bytes: measure(p).bytes }));
    const perByte =
      sample.reduce((a, s) => a + s.first.tokens, 0) /
      Math.max(
        1,
        sample.reduce((a, s) => a + s.bytes, 0),
      );
    for (const profile of group.profiles.slice(COUNTED_PER_GROUP)) {
      const m = measure(profile);
      keep(
        profile,
        m,
        Math.ceil(m.bytes * perByte),
        sample.every((s) => s.first.exact),
      );
    }
  }
  return counted;
}

function likelyOf(sources: EstimateSources, group: EstimateGroup, profile: AgentProfile, first: FirstPrompt, written: Set<string>): Likely {
  const price = priceOfAgent(sources, profile);
  return likelyFromSessions(sources.history, group, profile, first, price) ?? likelyFromMessages(group, profile, first, price, sources.groups, written);
}

/** What an agent's tokens cost: its model's price on its provider, at the batch price or in fast mode (six times) as it runs. */
function priceOfAgent(sources: EstimateSources, profile: AgentProfile): Price {
  return scaledPrice(sources.price(profile.model, profile.provider, profile.batch), profile.speed === 'fast' ? FAST_PRICE : 1);
}

/** The most one agent can cost: every turn it may take, each of its calls at a full context window and max_tokens, under its budget. */
function worstOfAgent(sources: EstimateSources, group: EstimateGroup, profile: AgentProfile): number {
  const { limits } = sources;
  const turns = Math.min(limits.maxTurnsPerAgent, limits.maxTurns, group.maxTurns ?? Infinity);
  const perCall = worstCaseCost(modelInfo(profile.model).window, profile.maxTokens, priceOfAgent(sources, profile));
  return Math.min(turns * CALLS_PER_TURN_AT_MOST * perCall, group.budgetUsd ?? Infinity, limits.budgetUsd);
}

/** The dearest dollars a token can cost in this run: output, or input written to the cache at the long-prompt tier. */
function dearestPerToken(sources: EstimateSources): number {
  const rates = sources.groups.flatMap((g) =>
    g.profiles.map((p) => {
      const price = priceOfAgent(sources, p);
      return Math.max(worstCaseCost(1, 0, price), worstCaseCost(10_000_000, 0, price) / 10_000_000, worstCaseCost(0, 1, price));
    }),
  );
  return Math.max(0, ...rates);
}
