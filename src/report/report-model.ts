import type { EventOf } from '../session/format.js';
import type { SessionRecord } from '../session/reader.js';
import { type AgentUsage, NO_AGENT_USAGE, type SessionSummary, summarize } from '../session/summary.js';
import { thousands } from '../thousands.js';
import { gradersShown, gradeSession, type GraderResult } from '../session/graders/graders.js';

/**
 * What `conclave report` shows of a run (docs/report.md), from its session alone: the summary
 * `show` prints, and per agent its model calls and tool calls in order, the spawn tree with each
 * subtree's cost, the gated writes, the resumes. Texts are kept as they are: the page escapes them.
 */
export interface ReportModel {
  summary: SessionSummary;
  /** Every agent that worked or was spawned, in the order first seen. */
  agents: string[];
  /** From the first event written to the last (a file from before `at_ms`: undefined). */
  startMs?: number;
  wallMs?: number;
  tree: TreeNode[];
  calls: Record<string, CallView[]>;
  gated: { agent: string; turn: number; tool: string }[];
  resumes: { at: string; replayed_through: number; conclave_version: string }[];
  /** Every grader of the session (docs/graders.md): its value, what it measures, and what stands behind it. */
  graders: ({ id: string; means: string } & GraderResult)[];
  /** Set when the session was too large to show whole: what was left out, in a sentence. */
  leftOut?: string;
}

export interface TreeNode {
  agent: string;
  template?: string;
  costUsd: number;
  subtreeUsd: number;
  children: TreeNode[];
}

export interface CallView {
  turn: number;
  step: number;
  atMs?: number;
  model: string;
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number };
  costUsd: number;
  batch?: string;
  cached: boolean;
  stop: string;
  text: string;
  tools: { name: string; input: string; result?: string; isError?: boolean }[];
}

/** How much of a long text the page holds; the session holds it whole. */
export const TEXT_LIMIT = 4_000;

export function reportModel(record: SessionRecord, options: { details?: boolean } = {}): ReportModel {
  const summary = summarize(record);
  const events = record.effective;
  const agents: string[] = [];
  const seen = (agent: string) => agents.includes(agent) || agents.push(agent);
  const calls: Record<string, CallView[]> = {};
  const byUse = new Map<string, CallView['tools'][number]>();
  const gated: ReportModel['gated'] = [];
  let first: number | undefined;
  let last: number | undefined;
  for (const e of events) {
    if (e.at_ms !== undefined) {
      first ??= e.at_ms;
      last = e.at_ms;
    }
    if (e.type === 'turn_started' || e.type === 'agent_spawned') seen(e.agent);
    if (e.type === 'model_call') {
      seen(e.agent);
      if (options.details !== false) (calls[e.agent] ??= []).push(callView(e, byUse));
    }
    if (e.type === 'tool_result') {
      const use = byUse.get(e.tool_use_id);
      if (use) Object.assign(use, { result: clip(e.content, 1_000), isError: e.is_error });
      if (e.is_error && e.content.startsWith('Not run: you read untrusted text')) gated.push({ agent: e.agent, turn: e.turn, tool: e.tool });
    }
  }
  for (const name of Object.keys(summary.agents)) seen(name);
  const graded = gradeSession(record, summary);
  const resumes = record.events
    .filter((e): e is EventOf<'resumed'> => e.type === 'resumed')
    .map(({ at, replayed_through, conclave_version }) => ({ at, replayed_through, conclave_version }));
  return {
    summary,
    agents,
    ...(first !== undefined && last !== undefined ? { startMs: first, wallMs: last - first } : {}),
    tree: spawnTree(agents, summary),
    calls,
    gated,
    resumes,
    graders: gradersShown(graded),
  };
}

function callView(e: EventOf<'model_call'>, byUse: Map<string, CallView['tools'][number]>): CallView {
  const response = e.response as { model?: unknown; stop_reason?: unknown; content?: unknown; usage?: Record<string, unknown> };
  const content = Array.isArray(response.content) ? (response.content as Record<string, unknown>[]) : [];
  const text = content
    .filter((b) => b?.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');
  const tools = content
    .filter((b) => b?.type === 'tool_use')
    .map((b) => {
      const view = { name: String(b.name ?? ''), input: clip(JSON.stringify(b.input ?? null, null, 1) ?? '', 1_000) };
      if (typeof b.id === 'string') byUse.set(b.id, view);
      return view;
    });
  const usage = response.usage ?? {};
  const count = (key: string) => (typeof usage[key] === 'number' ? (usage[key] as number) : 0);
  const request = e.request as { model?: unknown };
  return {
    turn: e.turn,
    step: e.step,
    ...(e.at_ms !== undefined ? { atMs: e.at_ms } : {}),
    // A call a server-side fallback answered shows the model that answered, and the one asked.
    model: e.answered_by !== undefined ? `${e.answered_by} (fallback for ${String(request.model)})` : String(request.model ?? response.model ?? ''),
    usage: {
      input: count('input_tokens'),
      output: count('output_tokens'),
      cacheRead: count('cache_read_input_tokens'),
      cacheWrite: count('cache_creation_input_tokens'),
    },
    costUsd: e.cost_usd,
    ...(e.batch ? { batch: e.batch } : {}),
    cached: e.cached === true,
    stop: String(response.stop_reason ?? ''),
    text: clip(text, TEXT_LIMIT),
    tools,
  };
}

/** The agents as the spawn tree: declared agents at the root, each spawned one under its parent, each with its own cost and its subtree's. */
function spawnTree(agents: readonly string[], summary: SessionSummary): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  const cost = (agent: string): AgentUsage => summary.agents[agent] ?? NO_AGENT_USAGE;
  for (const agent of agents) {
    const spawned = summary.spawned[agent];
    nodes.set(agent, { agent, ...(spawned ? { template: spawned.template } : {}), costUsd: cost(agent).cost_usd, subtreeUsd: 0, children: [] });
  }
  const roots: TreeNode[] = [];
  for (const node of nodes.values()) {
    const parent = summary.spawned[node.agent]?.parent;
    const above = parent !== undefined && parent !== node.agent ? nodes.get(parent) : undefined;
    // A parent that is itself below the child (a hostile session) would make a circle: the child stays at the root.
    if (above && !isBelow(above, node, summary)) above.children.push(node);
    else roots.push(node);
  }
  const total = (node: TreeNode): number => (node.subtreeUsd = node.costUsd + node.children.reduce((sum, c) => sum + total(c), 0));
  for (const root of roots) total(root);
  return roots;
}

function isBelow(candidate: TreeNode, node: TreeNode, summary: SessionSummary): boolean {
  const path = new Set<string>();
  for (let at: string | undefined = candidate.agent; at !== undefined && !path.has(at); at = summary.spawned[at]?.parent) {
    if (at === node.agent) return true;
    path.add(at);
  }
  return false;
}

export function clip(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}… (${thousands(text.length - limit)} more characters in the session)` : text;
}
