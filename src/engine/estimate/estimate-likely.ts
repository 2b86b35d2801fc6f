import type { AgentProfile } from '../../agents/profile.js';
import { costOf, type Price, type TokenUsage } from '../../provider/pricing.js';
import { modelInfo } from '../../provider/models.js';
import { medianBy, promptTokens, type RecordedCall, type RecordedRun } from './estimate-history.js';

/** A group of agents the estimate shows as one row. */
export interface EstimateGroup {
  name: string;
  kind: 'agent' | 'for_each' | 'template';
  /** Its agents as the run has them (a template: one stand-in instance). */
  profiles: readonly AgentProfile[];
  /** A for_each whose items are unknown: its one profile stands for one item. */
  perItem?: boolean;
  /** A template's own limits. */
  maxTurns?: number;
  budgetUsd?: number;
  /** Instances a template can have at most (limits.max_agents less the declared team). */
  atMost?: number;
}

/** An agent's first request, counted. */
export interface FirstPrompt {
  tokens: number;
  exact: boolean;
  /** Its tools and the workflow's `context:`: what agents with the same tools share in the prompt cache. */
  sharedTokens: number;
  sharedKey: string;
}

/** What an agent (or a template's instances together) likely costs. */
export interface Likely {
  usd: number;
  calls: number;
  cachedTokens: number;
  fromSessions: boolean;
  /** A template's instances. */
  instances?: number;
}

/**
 * Output tokens a call is taken to write when no session says: a short reply or a tool call. The
 * model decides this; docs/pricing.md says what the estimate cannot know.
 */
export const LIKELY_OUTPUT_TOKENS = 300;
/** What each later call's prompt grows by besides the answer before it: the message or tool result it brings. */
export const LIKELY_MESSAGE_TOKENS = 200;

/**
 * With no session: one turn (one call) for each time the agent is woken (the lead by the kickoff,
 * every agent by its task, a manager by its reports: each one with `wake: each`, all of them at
 * once with `wake: all`, as conclave's fan-in holds a manager until the agents it addressed have
 * answered), each call's prompt its first prompt plus
 * the conversation so far, the first writing the prompt cache and each later one reading what
 * the call before wrote. An agent's first call reads the tools and context another agent with the
 * same ones wrote before it.
 */
export function likelyFromMessages(
  group: EstimateGroup,
  profile: AgentProfile,
  first: FirstPrompt,
  price: Price,
  groups: readonly EstimateGroup[],
  written: Set<string>,
): Likely {
  const reports =
    group.kind === 'template' ? 0 : groups.flatMap((g) => (g.kind === 'template' ? [] : g.profiles)).filter((p) => p.reportsTo === profile.name).length;
  const calls = 1 + (profile.wake === 'all' ? Math.min(1, reports) : reports);
  const output = Math.min(profile.maxTokens, LIKELY_OUTPUT_TOKENS);
  const growth = output + LIKELY_MESSAGE_TOKENS;
  const cacheMin = modelInfo(profile.model).cacheMin;
  let usd = 0;
  let cachedTokens = 0;
  for (let k = 0; k < calls; k++) {
    const prompt = first.tokens + k * growth;
    let usage: TokenUsage;
    if (prompt < cacheMin) usage = { input_tokens: prompt, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    else if (k === 0) {
      const shared = first.sharedTokens >= cacheMin && written.has(first.sharedKey) ? first.sharedTokens : 0;
      if (first.sharedTokens >= cacheMin) written.add(first.sharedKey);
      usage = { input_tokens: 0, output_tokens: output, cache_creation_input_tokens: prompt - shared, cache_read_input_tokens: shared };
    } else usage = { input_tokens: 0, output_tokens: output, cache_creation_input_tokens: growth, cache_read_input_tokens: prompt - growth };
    usd += costOf(usage, price);
    cachedTokens += usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  }
  return { usd, calls, cachedTokens, fromSessions: false, instances: 1 };
}

/**
 * From earlier sessions (`--from`): the agent's calls in the session where they cost the median,
 * each prompt moved by how much its first prompt differs now (an input that grew, a longer
 * system prompt), at today's price. A `for_each` instance no session has takes its siblings'
 * median; a template, its instances together in the median session. Undefined when no session
 * knows the agent.
 */
export function likelyFromSessions(
  history: readonly RecordedRun[],
  group: EstimateGroup,
  profile: AgentProfile,
  first: FirstPrompt,
  price: Price,
): Likely | undefined {
  if (history.length === 0) return undefined;
  const cost = (calls: readonly RecordedCall[]) => calls.reduce((a, c) => a + costOf(c.usage, price), 0);
  if (group.kind === 'template') {
    const perSession = history.map((run) => {
      const agents = run.spawned.get(group.name) ?? [];
      return { agents: agents.length, calls: agents.flatMap((a) => run.calls.get(a) ?? []) };
    });
    const median = medianBy(perSession, (s) => cost(s.calls))!;
    return { ...priced(median.calls, first, price, perAgentFirst(history, group.name)), instances: median.agents };
  }
  let known = history.flatMap((run) => (run.calls.has(profile.name) ? [run.calls.get(profile.name)!] : []));
  if (known.length === 0 && group.kind === 'for_each') {
    const sibling = new RegExp(`^${group.name}-[0-9]+$`);
    known = history.flatMap((run) => [...run.calls].filter(([name]) => sibling.test(name)).map(([, calls]) => calls));
  }
  if (known.length === 0) return undefined;
  return priced(medianBy(known, cost)!, first, price);
}

/** A template's instances each start with their own first call: the first prompt of the first one stands for all. */
function perAgentFirst(history: readonly RecordedRun[], template: string): number | undefined {
  for (const run of history) {
    const agent = run.spawned.get(template)?.[0];
    const call = agent ? run.calls.get(agent)?.[0] : undefined;
    if (call) return promptTokens(call.usage);
  }
  return undefined;
}

function priced(calls: readonly RecordedCall[], first: FirstPrompt, price: Price, recordedFirst?: number): Likely {
  const then = recordedFirst ?? (calls[0] ? promptTokens(calls[0].usage) : first.tokens);
  const delta = first.tokens - then;
  let usd = 0;
  let cachedTokens = 0;
  for (const call of calls) {
    const usage = { ...call.usage };
    const part =
      usage.cache_read_input_tokens > 0 ? 'cache_read_input_tokens' : usage.cache_creation_input_tokens > 0 ? 'cache_creation_input_tokens' : 'input_tokens';
    usage[part] = Math.max(0, usage[part] + delta);
    usd += costOf(usage, price);
    cachedTokens += usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  }
  return { usd, calls: calls.length, cachedTokens, fromSessions: true };
}
