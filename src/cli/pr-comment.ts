import * as github from '@actions/github';
import type { SessionSummary } from '../session/summary.js';
import { fenced } from './github-report.js';
import { cell, dollars } from './markdown-tables.js';

/** Marks the comment a workflow keeps on a pull request, so that the next run finds it again. */
export function commentMarker(workflowPath: string): string {
  return `<!-- conclave: ${workflowPath.replace(/--/g, '- -')} -->`;
}

/** The comment: how the run ended, its outputs, its findings and its cost. */
export function commentBody(s: SessionSummary): string {
  const end = s.end;
  const icon = end ? (end.exit_code === 0 ? '✅' : '❌') : '⏸️';
  const lines = [commentMarker(s.header.workflow.path), `### ${icon} conclave: ${s.header.workflow.path}`, ''];
  lines.push(end ? `**${end.status}** (exit ${end.exit_code}): ${cell(end.reason)}` : 'The run has not ended: it can be resumed from its session file.', '');
  if (end?.summary) lines.push(fenced(end.summary), '');
  const outputs = Object.entries(end?.outputs ?? {});
  if (outputs.length) lines.push('| output | value |', '|---|---|', ...outputs.map(([k, v]) => `| ${k} | ${cell(v)} |`), '');
  if (s.findings.length) {
    lines.push(`**Findings** (${s.findings.length}):`, '');
    for (const f of s.findings) lines.push(`- **${f.level}** \`${f.path}:${f.line}${f.end_line > f.line ? `-${f.end_line}` : ''}\` ${f.title ? `**${cell(f.title)}**: ` : ''}${cell(f.message)}`);
    lines.push('');
  }
  lines.push(`Cost: ${dollars(s.total.cost_usd)} · ${s.total.calls} model calls · ${s.total.turns} turns`);
  return `${lines.join('\n')}\n`;
}

/**
 * Keeps one comment of this workflow on the pull request up to date: updated when it is there,
 * created otherwise. Through the GitHub REST API (GITHUB_API_URL honoured). Returns its URL.
 */
export async function upsertComment(token: string, body: string, marker: string): Promise<string> {
  const { context } = github;
  const number = context.payload.pull_request?.number ?? context.payload.issue?.number;
  if (!number) throw new Error('comment: true needs a pull_request (or issue) event: this run has no pull request to comment on');
  const octokit = github.getOctokit(token);
  const where = { owner: context.repo.owner, repo: context.repo.repo };
  const comments = await octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: number, per_page: 100 });
  const mine = comments.find((c) => c.body?.includes(marker));
  const saved = mine
    ? await octokit.rest.issues.updateComment({ ...where, comment_id: mine.id, body })
    : await octokit.rest.issues.createComment({ ...where, issue_number: number, body });
  return saved.data.html_url;
}
