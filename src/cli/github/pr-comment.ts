import * as github from '@actions/github';
import type { SessionSummary } from '../../session/summary.js';
import { ballotsSection } from './ballot-section.js';
import { cell, codeCell, commentLink, dollars, fenced, inline } from '../markdown-tables.js';
import { castLabel, isPerson } from '../../session/person.js';
import { EXIT } from '../../exit-codes.js';

/** Marks the comment a workflow keeps on a pull request, so that the next run finds it again. */
export function commentMarker(workflowPath: string): string {
  return `<!-- conclave: ${workflowPath.replace(/--/g, '- -')} -->`;
}

/** The run a comment shows, on its second line: a run closed as stale updates the comment only while it shows that run. */
export function runMarker(runId: string): string {
  return `<!-- conclave run: ${runId.replace(/--/g, '- -')} -->`;
}

/** GitHub refuses a comment body longer than this many characters. */
export const COMMENT_LIMIT = 65_536;

/**
 * The comment: how the run ended, its outputs, its findings and its cost. Model text is made
 * inert outside code blocks (no @mention pings anyone, no #123 links an issue, no marker can be
 * forged), and long parts are cut until the body fits GitHub's limit.
 */
export function commentBody(s: SessionSummary, page?: string): string {
  for (const cut of [Infinity, 8000, 1000, 0]) {
    const body = render(s, cut, page);
    if (body.length <= COMMENT_LIMIT) return body;
  }
  return `${render(s, 0).slice(0, COMMENT_LIMIT - 200)}\n\n*(cut to fit GitHub's limit on a comment: the job summary and \`conclave show\` have it all)*\n`;
}

function render(s: SessionSummary, cut: number, page?: string): string {
  const end = s.end;
  // A run parked for a batch or for people is waiting, not failed (its step is green).
  const icon = !end || end.exit_code === EXIT.waiting ? '⏸️' : end.status === 'stale' ? '⏹️' : end.exit_code === 0 ? '✅' : '❌';
  const lines = [commentMarker(s.header.workflow.path), runMarker(s.header.run_id), `### ${icon} conclave: ${inline(s.header.workflow.path)}`, ''];
  lines.push(
    // Maintainers read a word, not an exit code (the job summary and the step's log give it).
    end ? `**${end.status}**: ${inert(cell(end.reason))}` : 'The run has not ended: it can be resumed from its session file.',
    '',
  );
  if (end?.summary) lines.push(fenced(shorter(end.summary, cut)), '');
  lines.push(...ballotsSection(s, '####', inert));
  const tainted = Object.keys(s.tainted);
  if (tainted.length) {
    const who = tainted.map((a) => inert(`@${inline(a)}`)).join(', ');
    lines.push(
      `⚠️ ${tainted.length} agent${tainted.length === 1 ? '' : 's'} read text from outside the team (${who}): their writes outside the run needed consent.`,
      '',
    );
  }
  lines.push(...peopleDecisions(s));
  const outputs = Object.entries(end?.outputs ?? {});
  if (outputs.length) lines.push('| output | value |', '|---|---|', ...outputs.map(([k, v]) => `| ${k} | ${inert(cell(shorter(v, cut)))} |`), '');
  if (s.findings.length) {
    lines.push(`**Findings** (${s.findings.length}):`, '');
    const shown = cut === Infinity ? s.findings : s.findings.slice(0, Math.max(10, cut / 10));
    for (const f of shown)
      lines.push(
        `- **${f.level}** \`${f.path.replace(/`/g, "'")}:${f.line}${f.end_line > f.line ? `-${f.end_line}` : ''}\` ` +
          `${f.title ? `**${inert(cell(shorter(f.title, cut)))}**: ` : ''}${inert(cell(shorter(f.message, cut)))}`,
      );
    if (shown.length < s.findings.length) lines.push(`- *…and ${s.findings.length - shown.length} more, in the job summary and \`conclave show\`*`);
    lines.push('');
  }
  lines.push(`Cost: ${dollars(s.total.cost_usd)} · ${s.total.calls} model calls · ${s.total.turns} turns`);
  // The page's link is ours (the artifact's URL on this GitHub), never model text.
  if (page) lines.push('', `📄 [The run's page](${page}): its timeline, spawn tree, every call, message and vote.`);
  return `${lines.join('\n')}\n`;
}

/** The proposals people voted on, once closed: the outcome and each person's vote, by whom, with what permission, why, and its comment. */
function peopleDecisions(s: SessionSummary): string[] {
  const closed = s.proposals.filter((p) => p.status !== 'open' && p.voters.some(isPerson));
  if (closed.length === 0) return [];
  return [
    '**Decisions:**',
    '',
    ...closed.map((p) => {
      const votes = p.voters.flatMap((voter) => {
        const v = p.votes[voter];
        const cast = p.cast_by?.[voter];
        const why = v?.reason.trim() ? `, “${shorter(v.reason.trim(), 300)}”` : '';
        return v ? [`${inert(cell(`${castLabel(voter, cast)}: ${v.option}${why}`))}${cast?.url ? ` ${commentLink(cast.url)}` : ''}`] : [];
      });
      const result = `${p.status.replace('_', ' ')}${p.winner ? ` ${codeCell(p.winner)}` : ''}`;
      return `- ${inert(cell(p.id))}: ${result}${votes.length ? ` — ${votes.join('; ')}` : ''}`;
    }),
    '',
  ];
}

function shorter(text: string, cut: number): string {
  return text.length > cut ? `${text.slice(0, cut)}… (${text.length - cut} more characters)` : text;
}

/**
 * Model text as it may stand in a comment outside a code block: a zero-width space after `@` and
 * before an issue number keeps GitHub from notifying people or teams and from linking issues
 * (`#12`, `owner/repo#12`, `GH-12`); `<` is written as an entity, so no HTML comment (a forged
 * marker) or tag survives.
 */
export function inert(text: string): string {
  return text
    .replace(/</g, '&lt;')
    .replace(/@(?=[A-Za-z0-9_-])/g, '@\u200b')
    .replace(/#(?=\d)/g, '#\u200b')
    .replace(/\b(GH)-(?=\d)/gi, '$1\u200b-');
}

/**
 * Keeps one comment of this workflow on the pull request up to date: updated when it is there,
 * created otherwise. Through the GitHub REST API (GITHUB_API_URL honoured). Returns its URL.
 */
export async function upsertComment(
  token: string,
  body: string,
  marker: string,
  recordedPull?: number,
  /** Update the comment only while it shows this run (its runMarker); otherwise leave it, and the result is undefined. */
  onlyOf?: string,
): Promise<string | undefined> {
  const { context } = github;
  // A scheduled job that resumes a parked run has no pull request of its own: the session says which.
  const number = context.payload.pull_request?.number ?? context.payload.issue?.number ?? recordedPull;
  if (!number) throw new Error('comment: true needs a pull_request (or issue) event: this run has no pull request to comment on');
  const octokit = github.getOctokit(token);
  const where = { owner: context.repo.owner, repo: context.repo.repo };
  // Only a comment of this token's own (the bot's, for GITHUB_TOKEN) that starts with the marker:
  // anyone can write the marker into a comment of theirs, and a model can quote it.
  const me = await ownLogin(octokit);
  const comments = await octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: number, per_page: 100 });
  const mine = me === undefined ? undefined : comments.find((c) => c.user?.login === me && c.body?.startsWith(marker));
  if (onlyOf !== undefined && !mine?.body?.startsWith(`${marker}\n${runMarker(onlyOf)}\n`)) return undefined;
  const saved = mine
    ? await octokit.rest.issues.updateComment({ ...where, comment_id: mine.id, body })
    : await octokit.rest.issues.createComment({ ...where, issue_number: number, body });
  return saved.data.html_url;
}

/** Who the token is (`github-actions[bot]` for GITHUB_TOKEN), through GraphQL's viewer, which app tokens may ask; undefined when it cannot be told. */
async function ownLogin(octokit: ReturnType<typeof github.getOctokit>): Promise<string | undefined> {
  try {
    const { viewer } = await octokit.graphql<{ viewer: { login: string } }>('query { viewer { login } }');
    return viewer.login;
  } catch {
    return undefined;
  }
}
