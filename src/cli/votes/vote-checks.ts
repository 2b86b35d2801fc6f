import type { HumanVote } from '../../engine/people-votes.js';
import { ballotDigest } from '../../session/ballot.js';
import { teamOf } from '../../session/person.js';
import type { SessionRecord } from '../../session/reader.js';
import { summarize, type ProposalSummary } from '../../session/summary.js';
import { GitHubApi, GitHubUnavailable, permissionOf } from '../github/github-api.js';
import { UsageError } from '../usage-error.js';
import type { CommentSeen, VoteAsked } from './vote-source.js';

/**
 * A person's vote, checked before anything is recorded (docs/security.md: votes from people): the
 * proposal is open and offers the option; the person fills a seat of its voters and has not voted;
 * the digest is that of the proposal as it stands and of the pull request's head now; GitHub says
 * the person may write to the repository (and is in the team whose seat they fill); a comment was
 * not edited and is not older than the proposal. Any failure, GitHub's silence included, is a
 * UsageError in one sentence: the caller records nothing.
 */
export async function checkedVote(record: SessionRecord, asked: VoteAsked, env: NodeJS.ProcessEnv): Promise<HumanVote> {
  const p = openProposal(record, asked);
  const login = asked.voter;
  const who = `@${login}`;
  const cast = Object.values(p.cast_by ?? {}).find((c) => c.voter.toLowerCase() === login.toLowerCase());
  const direct = p.voters.find((v) => v.toLowerCase() === who.toLowerCase());
  if (cast || (direct && Object.hasOwn(p.votes, direct))) refuse(`${who} has voted on proposal "${p.id}" already; a person votes once`);
  const teams = p.voters.filter((v) => teamOf(v) !== undefined && !Object.hasOwn(p.votes, v));
  if (!direct && teams.length === 0) {
    const filled = p.voters.filter((v) => teamOf(v) !== undefined);
    refuse(`${who} is not among the voters of proposal "${p.id}" (${p.voters.join(', ')})${filled.length ? `, whose teams have all voted` : ''}`);
  }
  const github = record.header.github;
  if (asked.comment) commentInPlace(asked.comment, github, p);

  const api = GitHubApi.fromEnv(env);
  if (typeof api === 'string') refuse(api);
  const repository = github?.repository ?? env.GITHUB_REPOSITORY;
  if (!repository || !/^[^/\s]+\/[^/\s]+$/.test(repository)) refuse('the repository to check the voter against is not known: set GITHUB_REPOSITORY');
  try {
    // Who votes is checked first: a stranger's comment changes nothing, not even a moved-on run's state (it is closed as stale only for a voter).
    if (asked.comment) await commentUnedited(api as GitHubApi, repository!, asked.comment, login);
    const seat = direct ?? (await teamSeat(api as GitHubApi, teams, login));
    if (!seat) refuse(`${who} is not an active member of ${teams.join(' or ')}, and the proposal names ${who} in no other way`);
    const { level: permission, mayWrite } = await permissionOf(api as GitHubApi, repository!, login);
    if (!mayWrite) refuse(`${who} has ${permission} permission on ${repository}; a vote needs write (or maintain, or admin)`);
    await digestHolds(api as GitHubApi, repository!, p, asked.digest, github, record.header.run_id);
    return {
      proposal: p.id,
      seat: seat!,
      voter: login,
      option: asked.option,
      reason: asked.reason,
      digest: asked.digest,
      comment: asked.comment ? { id: asked.comment.id, url: asked.comment.url } : null,
      permission,
      at: new Date().toISOString(),
    };
  } catch (e) {
    if (e instanceof GitHubUnavailable) refuse(`${e.message}: a vote GitHub cannot vouch for is refused`);
    throw e;
  }
}

/** A vote not recorded, with why in one sentence: exit 2 on the command line; in the Action, an answer on the pull request and a neutral step. */
export class VoteRefused extends UsageError {
  constructor(why: string) {
    super(`vote refused, nothing recorded: ${why}`);
  }
}

/** The run reviewed a head its pull request has moved on from: the vote is refused, and the run closes as stale (`closing` says why; stale-run.ts). */
export class RunStale extends VoteRefused {
  constructor(
    why: string,
    readonly closing: string,
  ) {
    super(why);
  }
}

function refuse(why: string): never {
  throw new VoteRefused(why);
}

function openProposal(record: SessionRecord, asked: VoteAsked): ProposalSummary {
  const proposals = summarize(record).proposals;
  const p = proposals.find((q) => q.id === asked.proposal);
  if (!p) refuse(`the session has no proposal "${asked.proposal}"${proposals.length ? ` (it has ${proposals.map((q) => `"${q.id}"`).join(', ')})` : ''}`);
  if (p!.status !== 'open')
    refuse(`proposal "${p!.id}" is ${p!.status === 'decided' ? `decided already (${JSON.stringify(p!.winner)})` : `closed (${p!.status.replace('_', ' ')})`}`);
  if (!p!.options.includes(asked.option))
    refuse(`"${asked.option}" is not an option of proposal "${p!.id}" (${p!.options.map((o) => JSON.stringify(o)).join(', ')})`);
  // Past people.deadline the proposal closes by its rule with the votes cast: a later vote counts for nothing (a comment by when it was made).
  const made = asked.comment ? Date.parse(asked.comment.createdAt) : Date.now();
  if (p!.deadline_ms !== undefined && p!.opened_at_ms !== undefined && made > p!.opened_at_ms + p!.deadline_ms)
    refuse(
      `the vote came after proposal "${p!.id}"'s deadline (${new Date(p!.opened_at_ms + p!.deadline_ms).toISOString()}): it closes by its rule ` +
        'with the votes cast when the run is resumed',
    );
  return p!;
}

/** A comment on this run's pull request, in this run's repository, made after the proposal opened, and never edited. */
function commentInPlace(c: CommentSeen, github: SessionRecord['header']['github'], p: ProposalSummary): void {
  if (github && c.repository.toLowerCase() !== github.repository.toLowerCase())
    refuse(`the comment is in ${c.repository}, and the run is ${github.repository}'s`);
  if (github?.pull_request !== undefined && c.number !== github.pull_request)
    refuse(`the comment is on #${c.number}, and the run is on pull request #${github.pull_request}`);
  if (c.updatedAt !== undefined && c.updatedAt !== c.createdAt) refuse(`the comment was edited after it was made (${c.updatedAt})`);
  const made = Date.parse(c.createdAt);
  if (!Number.isFinite(made)) refuse(`the comment's time ${JSON.stringify(c.createdAt)} is not a time`);
  if (p.opened_at_ms !== undefined && made < p.opened_at_ms - 1000)
    refuse(`the comment (${c.createdAt}) is older than proposal "${p.id}" (${new Date(p.opened_at_ms).toISOString()})`);
}

/** The digest is that of the proposal as it stands, and of the pull request's head as it is now. */
async function digestHolds(
  api: GitHubApi,
  repository: string,
  p: ProposalSummary,
  digest: string,
  github: SessionRecord['header']['github'],
  runId: string,
): Promise<void> {
  const shown = github?.head;
  let head = shown;
  if (github?.pull_request !== undefined) {
    // A run on a pull request binds every vote to the head it showed: one that never knew it can bind none (fail closed).
    if (shown === undefined)
      refuse(`the run did not record the head of pull request #${github.pull_request} when it started, so no vote can be bound to what it reviewed`);
    const pull = await api.get(`/repos/${repository}/pulls/${github.pull_request}`);
    const sha = (pull?.head as { sha?: unknown } | undefined)?.sha;
    if (typeof sha !== 'string') throw new GitHubUnavailable(`GitHub did not say the head of pull request #${github.pull_request}`);
    head = sha;
  }
  // The run reviewed the head it showed: once the pull request moved on, no vote of this run may decide anything.
  if (head !== shown)
    throw new RunStale(
      `the run is stale: it reviewed ${shown!.slice(0, 12)}, and pull request #${github!.pull_request}'s head is ${head!.slice(0, 12)} now; a vote ` +
        `counts only in the run that reviewed the head it approves (vote on the ballot of the run for ${head!.slice(0, 12)}); this run is now closed as stale`,
      `pull request #${github!.pull_request} moved on to ${head!.slice(0, 12)} since this run reviewed ${shown!.slice(0, 12)}: the run is closed ` +
        `without a decision, and the run for ${head!.slice(0, 12)} has its own ballot`,
    );
  if (digest !== ballotDigest(p, { run: runId, head }))
    refuse(`the digest ${digest} is not that of proposal "${p.id}" as this run shows it: the ballot is stale, or another run's`);
}

/** GitHub's copy of the comment says what the event said: same author and text, never edited. */
async function commentUnedited(api: GitHubApi, repository: string, c: CommentSeen, login: string): Promise<void> {
  const path = c.kind === 'review' ? `/repos/${repository}/pulls/${c.number}/reviews/${c.id}` : `/repos/${repository}/issues/comments/${c.id}`;
  const now = await api.get(path);
  if (!now) refuse('the comment is no longer there');
  const author = (now!.user as { login?: unknown } | undefined)?.login;
  if (typeof author !== 'string' || author.toLowerCase() !== login.toLowerCase()) refuse("GitHub's copy of the comment has another author");
  if (now!.body !== c.body) refuse('the comment was edited after it was made (its text on GitHub differs from the event)');
  if (c.kind === 'issue_comment' && now!.updated_at !== now!.created_at) refuse(`the comment was edited after it was made (${String(now!.updated_at)})`);
}

/** The first of the team seats whose team has the person as an active member. */
async function teamSeat(api: GitHubApi, teams: readonly string[], login: string): Promise<string | undefined> {
  for (const seat of teams) {
    const { org, team } = teamOf(seat)!;
    const membership = await api.get(`/orgs/${org}/teams/${team}/memberships/${login}`);
    if (membership?.state === 'active') return seat;
  }
  return undefined;
}
