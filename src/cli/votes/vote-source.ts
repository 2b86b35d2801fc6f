import { readFileSync } from 'node:fs';
import { parseVoteCommand } from '../../session/ballot.js';
import { LOGIN } from '../../session/person.js';

/** A vote as it was asked for, before anything is checked with the session or GitHub. */
export interface VoteAsked {
  proposal: string;
  option: string;
  digest: string;
  reason: string;
  /** The login the vote is cast as. */
  voter: string;
  /** When it came from a comment (or review): what GitHub's event said of it. */
  comment?: CommentSeen;
}

export interface CommentSeen {
  kind: 'issue_comment' | 'review';
  id: number;
  url: string;
  body: string;
  createdAt: string;
  /** An issue comment's last edit; a review has none in its event. */
  updatedAt?: string;
  /** The issue or pull request it is on. */
  number: number;
  /** owner/repo the event names. */
  repository: string;
}

/** `--vote ID=OPTION --voter LOGIN --digest D [--reason TEXT]`, as the flags give them. */
export function voteFromFlags(flags: { vote?: string; voter?: string; digest?: string; reason?: string }): VoteAsked | string {
  const { vote = '', voter, digest } = flags;
  const eq = vote.indexOf('=');
  if (eq < 1 || eq === vote.length - 1) return `--vote takes PROPOSAL=OPTION, such as --vote verdict=approve; found ${JSON.stringify(vote)}`;
  if (voter === undefined || !LOGIN.test(voter.replace(/^@/, ''))) return '--vote needs --voter LOGIN: the GitHub login of the person who votes';
  if (digest === undefined || !/^[0-9a-f]{12}$/.test(digest)) return "--vote needs --digest: the 12 hex characters that end the ballot's command";
  return { proposal: vote.slice(0, eq), option: vote.slice(eq + 1), digest, reason: flags.reason ?? '', voter: voter.replace(/^@/, '') };
}

/**
 * `--from-comment`: the vote in the comment (or review) whose event started this job
 * (GITHUB_EVENT_PATH): a new `issue_comment` or a submitted `pull_request_review` whose whole
 * text is one `/conclave vote` command. Everything else is refused, in one sentence.
 */
export function voteFromEvent(env: NodeJS.ProcessEnv): VoteAsked | string {
  const path = env.GITHUB_EVENT_PATH;
  if (!path) return '--from-comment reads the event that started the job, and GITHUB_EVENT_PATH is not set';
  let event: unknown;
  try {
    event = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    return `--from-comment could not read the event file ${path}: ${(e as Error).message.split('\n')[0]}`;
  }
  if (!isObject(event)) return `the event file ${path} is not a JSON object`;
  const name = env.GITHUB_EVENT_NAME ?? (isObject(event.review) ? 'pull_request_review' : 'issue_comment');
  const seen = name === 'pull_request_review' ? reviewOf(event) : name === 'issue_comment' ? issueCommentOf(event) : `the job was started by ${name}`;
  if (typeof seen === 'string') return `no vote was read from the event: ${seen}; a vote comes from a new issue_comment or a submitted pull_request_review`;
  const command = parseVoteCommand(seen.comment.body);
  if (!command) return 'the comment is not a vote: its whole text must be one /conclave vote PROPOSAL OPTION DIGEST command, then a reason if any';
  return { ...command, voter: seen.login, comment: seen.comment };
}

type Seen = { login: string; comment: CommentSeen } | string;

function issueCommentOf(event: Record<string, unknown>): Seen {
  if (event.action !== 'created') return `the comment event is "${String(event.action)}", not "created" (an edited comment does not vote)`;
  const { comment, issue } = event;
  if (!isObject(comment) || !isObject(issue)) return 'the event has no comment and issue';
  return seen(comment, 'issue_comment', issue.number, comment.updated_at, event);
}

function reviewOf(event: Record<string, unknown>): Seen {
  if (event.action !== 'submitted') return `the review event is "${String(event.action)}", not "submitted"`;
  const { review, pull_request: pull } = event;
  if (!isObject(review) || !isObject(pull)) return 'the event has no review and pull request';
  return seen({ ...review, created_at: review.submitted_at }, 'review', pull.number, undefined, event);
}

function seen(c: Record<string, unknown>, kind: CommentSeen['kind'], number: unknown, updatedAt: unknown, event: Record<string, unknown>): Seen {
  const login = isObject(c.user) ? c.user.login : undefined;
  const repository = isObject(event.repository) ? event.repository.full_name : undefined;
  if (typeof login !== 'string' || !LOGIN.test(login)) return 'its author is not a GitHub user';
  if (!Number.isSafeInteger(c.id) || typeof c.body !== 'string' || typeof c.html_url !== 'string' || typeof c.created_at !== 'string')
    return 'the comment lacks its id, text, address or time';
  if (!Number.isSafeInteger(number) || typeof repository !== 'string') return 'the event does not name its issue and repository';
  if (updatedAt !== undefined && typeof updatedAt !== 'string') return "the comment's time of its last edit is not a time";
  return {
    login,
    comment: {
      kind,
      id: c.id as number,
      url: c.html_url,
      body: c.body,
      createdAt: c.created_at,
      ...(updatedAt !== undefined ? { updatedAt: updatedAt as string } : {}),
      number: number as number,
      repository,
    },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
