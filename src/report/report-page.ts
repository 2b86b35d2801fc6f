import { randomBytes } from 'node:crypto';
import { formatUsd } from '../provider/money.js';
import type { ProposalSummary } from '../session/summary.js';
import { attr, html, idOf, safeUrl } from './escape.js';
import { type CallView, clip, type ReportModel, TEXT_LIMIT, type TreeNode } from './report-model.js';
import { PAGE_SCRIPT, PAGE_STYLE } from './report-style.js';
import { timelineSvg } from './timeline-svg.js';
import { thousands } from '../thousands.js';

/**
 * One self-contained HTML page of a run (docs/report.md): styles and its one script inline, no
 * font, no request when it opens (a Content-Security-Policy that allows none, and runs only the
 * page's own script, by its nonce). Everything that matters is in the HTML itself, readable with
 * scripts off; the script only filters by agent and opens or closes every call at once.
 */
export function reportPage(model: ReportModel): string {
  const { summary } = model;
  const nonce = randomBytes(16).toString('base64');
  const workflow = String(summary.header.workflow?.path ?? '');
  const status = summary.end?.status ?? 'not ended';
  const title = `conclave: ${summary.end ? status : 'a run'} · ${workflow}`;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta http-equiv="Content-Security-Policy" content="' +
      `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; img-src data:; base-uri 'none'; form-action 'none'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${html(title)}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head><body>',
    header(model),
    filter(model),
    '<main>',
    model.leftOut ? `<p class="left-out">${html(model.leftOut)}</p>` : '',
    section('Cost by agent', 'cost', `${templateTable(model)}${costTable(model)}`),
    section('Spawn tree', 'tree', `<ul class="tree">${model.tree.map(treeItem).join('')}</ul>`),
    section('Timeline', 'timeline', timelineSvg(model)),
    section('Graders', 'graders', graders(model)),
    section('Proposals', 'proposals', summary.proposals.length ? summary.proposals.map(proposal).join('') : '<p class="none">No proposal was opened.</p>'),
    section('Messages', 'messages', messages(model)),
    section('Model calls', 'calls', calls(model)),
    summary.documents.length ? section('Documents', 'documents', documents(model)) : '',
    section('Untrusted text', 'trust', trust(model)),
    model.resumes.length ? section('Resumes', 'resumes', resumes(model)) : '',
    '</main>',
    `<footer>Written by conclave report from ${html(String(summary.header.session ?? 'the session'))} ` +
      `(run ${html(String(summary.header.run_id ?? ''))}).</footer>`,
    `<script nonce="${nonce}">${PAGE_SCRIPT}</script>`,
    '</body></html>',
  ].join('\n');
}

/** The graders as a table: each value, what it measures, and what stands behind it (docs/graders.md). */
function graders(model: ReportModel): string {
  const rows = model.graders.map(
    (g) =>
      `<tr><th scope="row"><code>${html(g.id)}</code></th><td>${g.value === null ? '—' : html(String(g.value))}</td>` +
      `<td>${html(g.means)}</td><td>${html(g.behind ?? '')}</td></tr>`,
  );
  const head = ['grader', 'value', 'what it measures', 'behind it'].map((h) => `<th scope="col">${h}</th>`).join('');
  // Focusable and named: on a phone the table may scroll, and a keyboard must reach it.
  const table = `<table class="graders"><thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
  return `<div class="wide" tabindex="0" role="region" aria-label="Graders">${table}</div>`;
}

const section = (heading: string, id: string, body: string) => `<section id="${id}"><h2>${heading}</h2>${body}</section>`;
const usd = (n: number) => html(formatUsd(n));
const n = thousands;
const agentLink = (agent: string) => `<a href="#${attr(idOf(agent))}" class="agent">@${html(agent)}</a>`;

function header(model: ReportModel): string {
  const { summary } = model;
  const end = summary.end;
  const rows: [string, string][] = [
    ['workflow', html(String(summary.header.workflow?.path ?? ''))],
    ['status', `<span class="status status-${attr(end?.status ?? 'open')}">${html(end?.status ?? 'not ended')}</span>`],
    ...verdicts(summary.proposals),
    ['ending', html(end?.reason ?? 'the session ends before the run did (it may be resumed)')],
    ['cost', `<strong id="run-cost">${usd(summary.total.cost_usd)}</strong> · ${n(summary.total.calls)} model calls · ${n(summary.total.turns)} turns`],
  ];
  if (model.wallMs !== undefined) rows.push(['wall time', `${(model.wallMs / 1000).toFixed(1)} s`]);
  if (summary.estimate)
    rows.push(['estimate', `likely ${usd(summary.estimate.likely_usd)}, at worst ${usd(summary.estimate.worst_usd)} (before the first call)`]);
  const { cache, batches } = summary;
  if (cache.read_tokens || cache.written_tokens)
    rows.push(['prompt cache', `${n(cache.read_tokens)} tokens read, ${n(cache.written_tokens)} written: saved ${usd(cache.saved_usd)}`]);
  if (batches.calls) rows.push(['message batches', `${n(batches.calls)} calls at the batch price: saved ${usd(batches.saved_usd)}`]);
  if (batches.parked) rows.push(['parked', `${batches.parked} times, ${(batches.parked_ms / 1000).toFixed(0)} s waiting`]);
  if (summary.paced.calls) rows.push(['rate limits', `${n(summary.paced.calls)} calls waited ${(summary.paced.ms / 1000).toFixed(1)} s`]);
  const outputs = Object.entries(end?.outputs ?? {}).map(([k, v]) => `<tr><th>${html(k)}</th><td><pre>${html(clip(String(v), TEXT_LIMIT))}</pre></td></tr>`);
  return [
    `<header><h1>${html(summary.header.workflow?.path ? `Run of ${summary.header.workflow.path}` : 'A conclave run')}</h1>`,
    `<div class="wide"><table class="facts">${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join('')}</table></div>`,
    end?.summary ? `<h2>Summary</h2><p class="summary">${html(end.summary)}</p>` : '',
    outputs.length ? `<h2>Outputs</h2><div class="wide"><table class="outputs">${outputs.join('')}</table></div>` : '',
    summary.header.note ? `<p class="note">${html(String(summary.header.note))}</p>` : '',
    '</header>',
  ].join('');
}

/** Each decided proposal's winner, in the header: what the run decided, before how it ended. */
function verdicts(proposals: readonly ProposalSummary[]): [string, string][] {
  const decided = proposals.filter((p) => p.winner);
  if (decided.length === 0) return [];
  const each = decided.map(
    (p) => `<a href="#proposal-${attr(p.id.replace(/[^A-Za-z0-9_-]/g, '_'))}">${html(p.id)}</a>: <strong class="winner">${html(p.winner!)}</strong>`,
  );
  return [[decided.length === 1 ? 'verdict' : 'verdicts', each.join(' · ')]];
}

/** The agents made from each template, by template: a run of 1+64 gets one line for the 64 (and their filter one box). */
function byTemplate(model: ReportModel): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const agent of model.agents) {
    const template = model.summary.spawned[agent]?.template;
    if (template) groups.set(template, [...(groups.get(template) ?? []), agent]);
  }
  return groups;
}

function filter(model: ReportModel): string {
  const pick = (a: string, template?: string) =>
    `<label><input type="checkbox" class="pick" value="${attr(a)}"${template ? ` data-template="${attr(template)}"` : ''} checked> @${html(a)}</label>`;
  const groups = byTemplate(model);
  const grouped = new Set([...groups.values()].flat());
  const single = model.agents.filter((a) => !grouped.has(a)).map((a) => pick(a));
  const folded = [...groups].map(
    ([template, agents]) =>
      `<label><input type="checkbox" class="pick-template" value="${attr(template)}" checked> ${html(template)} (${agents.length})</label>` +
      `<details class="instances"><summary>each</summary>${agents.map((a) => pick(a, template)).join(' ')}</details>`,
  );
  const options = [...single, ...folded].join(' ');
  const button = (id: string, label: string) => `<button type="button" id="${id}">${label}</button>`;
  return (
    `<nav id="filter" hidden><strong>Show agents:</strong> ${button('all', 'all')} ${button('none', 'none')} ${options}<br>` +
    `${button('open', 'open every call')} ${button('close', 'close every call')}</nav>`
  );
}

const COST_COLUMNS = ['agent', 'spawned', 'turns', 'calls', 'input', 'cached', 'output', 'cost'];

function costTable(model: ReportModel): string {
  const { summary } = model;
  const rows = model.agents.map((agent) => {
    const u = summary.agents[agent];
    const spawned = summary.spawned[agent];
    const role = spawned ? `from ${html(spawned.template)}, by ${agentLink(spawned.parent)}` : '';
    return (
      `<tr id="${attr(idOf(agent))}" data-agent="${attr(agent)}"><td>${agentLink(agent)}</td><td>${role}</td>` +
      `<td>${n(u?.turns ?? 0)}</td><td>${n(u?.calls ?? 0)}</td><td>${n(u?.input_tokens ?? 0)}</td><td>${n(u?.cache_read_input_tokens ?? 0)}</td>` +
      `<td>${n(u?.output_tokens ?? 0)}</td><td>${usd(u?.cost_usd ?? 0)}</td></tr>`
    );
  });
  const t = summary.total;
  return (
    `<div class="wide"><table class="cost"><thead><tr>${COST_COLUMNS.map((h) => `<th>${h}</th>`).join('')}</tr></thead>` +
    `<tbody>${rows.join('')}</tbody><tfoot><tr><th>run</th><td></td><td>${n(t.turns)}</td><td>${n(t.calls)}</td><td>${n(t.input_tokens)}</td>` +
    `<td>${n(t.cache_read_input_tokens)}</td><td>${n(t.output_tokens)}</td><td>${usd(t.cost_usd)}</td></tr></tfoot></table></div>`
  );
}

/** The cost of the agents made from each template, summed: the roll-up a wide spawn needs before its rows. */
function templateTable(model: ReportModel): string {
  const groups = byTemplate(model);
  if (groups.size === 0) return '';
  const rows = [...groups].map(([template, agents]) => {
    const sum = (field: 'turns' | 'calls' | 'input_tokens' | 'output_tokens' | 'cost_usd') =>
      agents.reduce((total, a) => total + (model.summary.agents[a]?.[field] ?? 0), 0);
    return (
      `<tr><td>${html(template)}</td><td>${n(agents.length)}</td><td>${n(sum('turns'))}</td><td>${n(sum('calls'))}</td>` +
      `<td>${n(sum('input_tokens'))}</td><td>${n(sum('output_tokens'))}</td><td>${usd(sum('cost_usd'))}</td></tr>`
    );
  });
  const head = ['template', 'agents', 'turns', 'calls', 'input', 'output', 'cost'].map((h) => `<th>${h}</th>`).join('');
  const table = `<table class="cost by-template"><thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
  return `<h3>By template</h3><div class="wide">${table}</div><h3>Each agent</h3>`;
}

function treeItem(node: TreeNode): string {
  const own = node.children.length ? ` (own ${usd(node.costUsd)})` : '';
  const template = node.template ? ` <span class="template">${html(node.template)}</span>` : '';
  const children = node.children.length ? `<ul>${node.children.map(treeItem).join('')}</ul>` : '';
  const subtree = `<span class="subtree" data-usd="${node.subtreeUsd}">${usd(node.subtreeUsd)}</span>`;
  return `<li data-agent="${attr(node.agent)}">${agentLink(node.agent)}${template} ${subtree}${own}${children}</li>`;
}

function proposal(p: ProposalSummary): string {
  const votes = Object.entries(p.votes).map(([voter, v]) => {
    const person = p.cast_by?.[voter];
    const who = person ? `${html(person.voter)} <span class="permission">(${html(person.permission)})</span>` : agentLink(voter);
    const link = person?.url && safeUrl(person.url) ? ` <a href="${safeUrl(person.url)}" rel="noopener noreferrer" target="_blank">comment</a>` : '';
    return `<tr><td>${who}${link}</td><td>${html(v.option)}</td><td>${html(v.reason)}</td></tr>`;
  });
  const advice = Object.entries(p.advice ?? {}).map(
    ([voter, v]) => `<tr><td>${agentLink(voter)} (advice)</td><td>${html(v.option)}</td><td>${html(v.reason)}</td></tr>`,
  );
  const outcome = p.winner ? `<strong class="winner">${html(p.winner)}</strong>` : html(p.status);
  const tally = Object.entries(p.tally)
    .map(([o, c]) => `${html(o)} ${c}`)
    .join(', ');
  return (
    `<article class="proposal" id="proposal-${attr(p.id.replace(/[^A-Za-z0-9_-]/g, '_'))}"><h3>${html(p.id)}: ${html(p.question)}</h3>` +
    `<p>by ${agentLink(p.proposer)} · rule ${html(p.rule)} · ${outcome} (${tally})${p.reason ? ` · ${html(p.reason)}` : ''}</p>` +
    (p.action ? `<p>asks consent for <code>${html(p.action.tool)}</code> <code>${html(clip(JSON.stringify(p.action.input), 500))}</code></p>` : '') +
    '<div class="wide"><table class="votes"><thead><tr><th>voter</th><th>vote</th><th>reason</th></tr></thead>' +
    `<tbody>${[...votes, ...advice].join('') || '<tr><td colspan="3">no vote</td></tr>'}</tbody></table></div></article>`
  );
}

/** A message's text with each @mention of a known agent a link to it. */
function withMentions(text: string, agents: ReadonlySet<string>): string {
  return html(text).replace(/(^|[^\w@])@([A-Za-z0-9_][A-Za-z0-9_-]*)/g, (whole, before: string, name: string) =>
    agents.has(name) ? `${before}${agentLink(name)}` : whole,
  );
}

function messages(model: ReportModel): string {
  const known = new Set(model.agents);
  const items = model.summary.messages.map((m) => {
    const to = m.recipients.length ? ` → ${m.recipients.map(agentLink).join(', ')}` : '';
    const from = m.sender === 'system' ? `<span class="system">${html(m.kind)}</span>` : agentLink(m.sender);
    const text = withMentions(clip(m.text, TEXT_LIMIT), known);
    return `<li id="msg-${m.id}" data-agent="${attr(m.sender)}"><div class="who">${from}${to}</div><pre>${text}</pre></li>`;
  });
  return items.length ? `<ol class="messages">${items.join('')}</ol>` : '<p class="none">No message.</p>';
}

function callItem(agent: string, c: CallView): string {
  const cached = `${c.usage.cacheRead ? `, ${n(c.usage.cacheRead)} cached` : ''}${c.usage.cacheWrite ? `, ${n(c.usage.cacheWrite)} written to the cache` : ''}`;
  const tokens = `${n(c.usage.input)} in${cached}, ${n(c.usage.output)} out`;
  const how = [c.batch ? `batch ${html(c.batch)}` : '', c.cached ? 'from the response cache' : '', c.stop ? html(c.stop) : ''].filter(Boolean).join(' · ');
  const tools = c.tools
    .map(
      (t) =>
        `<div class="tool"><code>${html(t.name)}</code><pre>${html(t.input)}</pre>` +
        `${t.result !== undefined ? `<pre class="${t.isError ? 'result error' : 'result'}">${html(t.result)}</pre>` : ''}</div>`,
    )
    .join('');
  return (
    `<details class="call" data-agent="${attr(agent)}"><summary>@${html(agent)} · turn ${c.turn}, call ${c.step} · ${html(c.model)} · ${tokens}` +
    ` · ${usd(c.costUsd)}` +
    `${how ? ` · ${how}` : ''}</summary>${c.text ? `<pre>${html(c.text)}</pre>` : ''}${tools}</details>`
  );
}

function calls(model: ReportModel): string {
  const list = Object.entries(model.calls).flatMap(([agent, cs]) => cs.map((c) => callItem(agent, c)));
  return list.length ? list.join('') : '<p class="none">No model call is shown (the session holds none, or it was too large to show them).</p>';
}

function documents(model: ReportModel): string {
  return model.summary.documents
    .map(
      (d) =>
        `<article class="document"><h3>${html(d.name)} <span class="owner">owned by ${agentLink(d.owner)}, version ${d.version}</span></h3><ol>` +
        d.history.map((s) => `<li>${agentLink(s.agent)} ${html(s.what)}${s.edit ? ` ${html(s.edit)}` : ''}${s.why ? `: ${html(s.why)}` : ''}</li>`).join('') +
        `</ol><details><summary>its text</summary><pre>${html(clip(d.text, TEXT_LIMIT))}</pre></details></article>`,
    )
    .join('');
}

function trust(model: ReportModel): string {
  const tainted = Object.entries(model.summary.tainted);
  const rows = tainted.map(([agent, why]) => `<li>${agentLink(agent)} read untrusted text: ${html(why)}</li>`);
  const gated = model.gated.map((g) => `<li>${agentLink(g.agent)}'s <code>${html(g.tool)}</code> in turn ${g.turn} was held for the team's consent</li>`);
  if (rows.length === 0 && gated.length === 0) return '<p class="none">No agent read text from outside the team.</p>';
  return `<ul>${rows.join('')}${gated.join('')}</ul>`;
}

function resumes(model: ReportModel): string {
  const item = (r: ReportModel['resumes'][number]) => `<li>${html(r.at)}: conclave ${html(r.conclave_version)} went on after event #${r.replayed_through}</li>`;
  return `<ol>${model.resumes.map(item).join('')}</ol>`;
}
