import { PROVIDER_TITLE, type ProviderName } from '../provider/clouds.js';
import { castLabel } from '../session/person.js';
import { NO_AGENT_USAGE, type AgentUsage, type DocumentStep, type SessionSummary } from '../session/summary.js';
import { batchLine, cacheLine, cacheMissLines, fallbackLines } from './github/saving-lines.js';

export { cell, codeCell, dollars, fenced, inline, mermaidLabel } from './markdown-text.js';
import { cell, codeCell, dollars, fenced, inline, mermaidLabel } from './markdown-text.js';

/** The tables `show --format markdown` and the job summary share; `heading` is `##` or `###`. */

export function outputsTable(outputs: Record<string, string>, heading: string): string[] {
  if (Object.keys(outputs).length === 0) return [];
  return [`${heading} Outputs`, '', '| output | value |', '|---|---|', ...Object.entries(outputs).map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`), ''];
}

export function proposalsTable(s: SessionSummary, heading: string): string[] {
  if (s.proposals.length === 0) return [];
  const rows = s.proposals.map((p) => {
    const tally = Object.entries(p.tally)
      .map(([o, n]) => `${o}: ${n}`)
      .join(', ');
    // Each part escaped on its own: a person's vote links to its comment.
    const votes = [
      ...p.voters
        .filter((v) => p.votes[v] || !p.refused.some((r) => r.voter === v))
        .map((voter) => {
          const v = p.votes[voter];
          const cast = p.cast_by?.[voter];
          const link = cast?.url ? ` ${commentLink(cast.url)}` : '';
          return `${cell(`${castLabel(voter, cast)}: ${v ? `${v.option}${v.reason ? ` (${v.reason})` : ''}` : 'no vote'}`)}${link}`;
        }),
      ...p.refused.map((r) => cell(`@${r.voter}: ${r.option} (not counted)`)),
      ...Object.entries(p.advice ?? {}).map(([agent, v]) => cell(`@${agent} (advice): ${v.option}${v.reason ? ` (${v.reason})` : ''}`)),
    ].join('; ');
    return (
      `| ${cell(p.id)} | ${cell(p.question)} | ${cell(p.status.replace('_', ' '))}${p.winner ? ` **${cell(p.winner)}**` : ''} | ${cell(tally)} | ` +
      `${votes} | ${cell(p.rule)} |`
    );
  });
  return [`${heading} Proposals`, '', '| proposal | question | result | tally | votes | rule |', '|---|---|---|---|---|---|', ...rows, ''];
}

export function usageTable(s: SessionSummary, title: string): string[] {
  const rows = agentTree(s).map(({ name, depth, usage: u, below }) => {
    const label = `${depth ? `${indentOf(depth, '&nbsp;&nbsp;')}↳ ` : ''}${cell(name)}${s.spawned[name]?.ended ? ` (${cell(s.spawned[name]!.ended!)})` : ''}`;
    return (
      `| ${label} | ${u.turns} | ${u.calls} | ${u.input_tokens} | ${u.cache_read_input_tokens} | ${u.cache_creation_input_tokens} | ${u.output_tokens} ` +
      `| ${dollars(u.cost_usd)} | ${below ? `${dollars(below.costUsd)} (with the ${below.agents - 1} below)` : ''} |`
    );
  });
  const t = s.total;
  rows.push(
    `| **total** | ${t.turns} | ${t.calls} | ${t.input_tokens} | ${t.cache_read_input_tokens} | ${t.cache_creation_input_tokens} | ${t.output_tokens} | ` +
      `${dollars(t.cost_usd)} | |`,
  );
  const shared = [cacheLine(s), ...cacheMissLines(s), ...fallbackLines(s), batchLine(s), ...sharedLimitLines(s)].filter(Boolean).map((line) => `${line}  `);
  const head = '| agent | turns | calls | input tokens | cache read | cache written | output tokens | cost | with the agents it spawned |';
  return [title, '', head, '|---|---|---|---|---|---|---|---|---|', ...rows, ...(shared.length ? ['', ...shared] : [])];
}

/**
 * The run's timeline as a Mermaid gantt chart, which GitHub draws: a row per agent, a bar per
 * turn (a failed one in red), a bar per wait for a rate limit. Nothing for a session without times.
 */
export function timelineChart(s: SessionSummary, heading: string): string[] {
  const rows = s.timeline.filter((r) => r.bars.length > 0);
  if (rows.length === 0) return [];
  const tag = { turn: '', failed: 'crit, ', wait: 'active, ', people: 'active, ', parked: 'done, ' } as const;
  const lines = ['```mermaid', 'gantt', '  dateFormat x', '  axisFormat %M:%S'];
  const all = rows.reduce((n, r) => n + r.bars.length, 0);
  let shown = 0;
  for (const { agent, bars } of rows) {
    if (shown >= TIMELINE_BARS) break;
    lines.push(`  section ${mermaidLabel(agent)}`);
    for (const bar of bars.slice(0, TIMELINE_BARS - shown))
      lines.push(`  ${mermaidLabel(bar.label)} : ${tag[bar.kind] ?? ''}${Math.round(bar.startMs)}, ${Math.round(Math.max(bar.endMs, bar.startMs + 1))}`);
    shown += Math.min(bars.length, TIMELINE_BARS - shown);
  }
  const note = shown < all ? [`*The timeline shows ${shown} of ${all} bars.*`, ''] : [];
  return [`${heading} Timeline`, '', ...lines, '```', '', ...note];
}

/** A chart with more bars than this is not read, and GitHub draws it slowly. */
const TIMELINE_BARS = 400;

/**
 * Where the calls went when a cloud served any (docs/providers.md), what the run drew from each
 * spend pool, and how long its calls waited for rate limits (docs/organisation.md).
 */
export function sharedLimitLines(s: SessionSummary): string[] {
  const byProvider = Object.entries(s.providers);
  const lines = byProvider.some(([name]) => name !== 'anthropic')
    ? [
        `Providers: ${byProvider
          .map(([name, p]) => `${PROVIDER_TITLE[name as ProviderName] ?? inline(name)} ${p.calls} call${p.calls === 1 ? '' : 's'} ${dollars(p.cost_usd)}`)
          .join(' · ')}`,
      ]
    : [];
  lines.push(...s.pools.map((p) => `Spend pool ${inline(p.name)} (${dollars(p.cap_usd)} per ${inline(p.per)}): this run drew ${dollars(p.drawn_usd)}`));
  if (s.paced.calls > 0) lines.push(`Rate limits: ${s.paced.calls} call${s.paced.calls === 1 ? '' : 's'} waited ${(s.paced.ms / 1000).toFixed(1)} s in all`);
  return lines;
}

export interface AgentRow {
  name: string;
  /** 0 for a declared agent; n for one spawned n levels below. */
  depth: number;
  usage: AgentUsage;
  /** For an agent that spawned others: the cost of it and every agent below it, and how many those are. */
  below?: { costUsd: number; agents: number };
}

/**
 * The agents in tree order: each spawned agent under the agent that spawned it, in the order
 * spawned. Walked without recursion, each agent once: a session file's chain of spawns may be as
 * deep as it likes, or loop, and still prints.
 */
/** How deep the usage tables indent a spawned agent; deeper ones say their depth instead, so that a row's width stays bounded. */
const INDENT_AT_MOST = 12;

/** `unit` once per level of `depth`, up to INDENT_AT_MOST levels; deeper, the depth as a number after them. */
export function indentOf(depth: number, unit: string): string {
  return depth <= INDENT_AT_MOST ? unit.repeat(depth) : `${unit.repeat(INDENT_AT_MOST)}[depth ${depth}] `;
}

export function agentTree(s: SessionSummary): AgentRow[] {
  const children = new Map<string, string[]>();
  for (const [name, a] of Object.entries(s.spawned)) children.set(a.parent, [...(children.get(a.parent) ?? []), name]);
  const rows: AgentRow[] = [];
  const seen = new Set<string>();
  const stack: { name: string; depth: number }[] = Object.keys(s.agents)
    .filter((name) => !s.spawned[name])
    .reverse()
    .map((name) => ({ name, depth: 0 }));
  while (stack.length > 0) {
    const { name, depth } = stack.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    rows.push({ name, depth, usage: s.agents[name] ?? NO_AGENT_USAGE });
    for (const child of [...(children.get(name) ?? [])].reverse()) stack.push({ name: child, depth: depth + 1 });
  }
  // Totals from the last row back: a row's subtree is the rows after it that are deeper, up to the next that is not.
  const open: { row: AgentRow; total: { costUsd: number; agents: number } }[] = [];
  const close = (until: number) => {
    while (open.length > 0 && open.at(-1)!.row.depth >= until) {
      const done = open.pop()!;
      if (done.total.agents > 1) done.row.below = done.total;
      if (open.length > 0) {
        open.at(-1)!.total.costUsd += done.total.costUsd;
        open.at(-1)!.total.agents += done.total.agents;
      }
    }
  };
  for (const row of rows) {
    close(row.depth);
    open.push({ row, total: { costUsd: row.usage.cost_usd, agents: 1 } });
  }
  close(0);
  return rows;
}

/** Each compaction of an agent's conversation (docs/design.md: context): when, how much, and what it kept. */
export function compactionsTable(s: SessionSummary, heading: string): string[] {
  if (s.compactions.length === 0) return [];
  const rows = s.compactions.map(
    (c) =>
      `| @${cell(c.agent)} | ${c.turn} | ${c.reason === 'too_long' ? 'the API said too long' : 'compact_at'} | ${c.tokens_before} → ${c.tokens_after} | ` +
      `${c.cleared} | ${c.summary === null ? 'no' : `${c.summary.length} characters`} |`,
  );
  return [`${heading} Compactions`, '', '| agent | turn | why | tokens | tool results cleared | summary |', '|---|---|---|---|---|---|', ...rows, ''];
}

/** The agents' findings (the annotate tool): where, how serious, what. */
export function findingsTable(s: SessionSummary, heading: string): string[] {
  if (s.findings.length === 0) return [];
  const rows = s.findings.map(
    (f) =>
      `| ${cell(f.level)} | ${codeCell(`${f.path}:${f.line}${f.end_line > f.line ? `-${f.end_line}` : ''}`)} | ` +
      `${f.title ? `**${cell(f.title)}**: ` : ''}${cell(f.message)} | @${cell(f.agent)} |`,
  );
  return [`${heading} Findings`, '', '| level | where | finding | by |', '|---|---|---|---|', ...rows, ''];
}

/** What one step of a document's history says, for `show` and the job summary. */
export function documentStepText(step: DocumentStep): string {
  const edit = step.edit ?? '';
  const why = `${step.lines ? ` (+${step.lines.added} −${step.lines.removed} lines)` : ''}${step.why ? `: ${step.why}` : ''}`;
  switch (step.what) {
    case 'opened':
      return 'opened';
    case 'edited':
      return `@${step.agent} edited it${why}`;
    case 'merged':
      return `${edit} by @${step.agent} merged${why}`;
    case 'appended':
      return `@${step.agent} appended an entry${why}`;
    case 'proposed':
      return `@${step.agent} proposed ${edit}${why}`;
    case 'conflict':
      return `@${step.agent} accepted ${edit}, which conflicted and did not land${why}`;
    default:
      return `@${step.agent} ${step.what} ${edit}${why}`;
  }
}

/** Each document's final text, folded, and its history: who changed what, accepted or rejected. */
export function documentsSection(s: SessionSummary, heading: string): string[] {
  if (s.documents.length === 0) return [];
  const lines = [`${heading} Documents`, ''];
  for (const d of s.documents) {
    lines.push(
      `<details><summary>${inline(d.name)}: version ${d.version}, owner @${inline(d.owner)}${d.mode === 'append' ? ', append' : ''}` +
        `${d.conflicts.length ? `, ${d.conflicts.length} in conflict (${inline(d.conflicts.join(', '))})` : ''}` +
        `${d.open_edits.length ? `, ${d.open_edits.length} never reviewed (${inline(d.open_edits.join(', '))})` : ''}</summary>`,
      '',
      fenced(d.text),
      '',
      '| version | change |',
      '|---|---|',
      ...d.history.map((step) => `| ${step.version ?? ''} | ${cell(documentStepText(step))} |`),
      '',
      '</details>',
      '',
    );
  }
  return lines;
}

/** A vote's comment as a Markdown link, only when its address is a plain https one (a session is hostile input). */
export function commentLink(url: string): string {
  return /^https:\/\/[^\s()<>[\]]+$/.test(url) ? `[comment](${url})` : 'comment';
}
