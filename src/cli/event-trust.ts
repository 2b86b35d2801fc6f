import { readFileSync } from 'node:fs';
import { GitHubApi, GitHubUnavailable, permissionOf } from './github-api.js';

/** The event that started the job, as it was then (the `github.*` of expressions): frozen in the session header. */
export interface EventSnapshot {
  event_name: string;
  title: string;
  body: string;
  comment: string;
  author: string;
}

/** Whether the run's event is a stranger's, and why (docs/security.md: untrusted content). */
export interface EventTrust {
  untrusted: boolean;
  why: string;
}

/** Events whose text is written by whoever opened the issue or wrote the comment: whether they may write is asked of GitHub. */
export const AUTHORED_EVENTS: ReadonlySet<string> = new Set([
  'issues',
  'issue_comment',
  'pull_request_review',
  'pull_request_review_comment',
  'discussion',
  'discussion_comment',
]);
const PULL_EVENTS = new Set(['pull_request', 'pull_request_review', 'pull_request_review_comment']);

/**
 * In GitHub Actions: what the event says (title, body, the comment, its author), and whether its
 * text and code are a stranger's. A `pull_request_target` event, a pull request from a fork, and
 * an issue or comment whose author GitHub does not say may write to the repository are; so is an
 * author GitHub could not be asked about (fail closed). Outside Actions, or with no event file:
 * nothing to snapshot, and the run is the maintainer's.
 */
export async function eventTrust(env: NodeJS.ProcessEnv): Promise<{ event?: EventSnapshot; trust?: EventTrust }> {
  const name = env.GITHUB_EVENT_NAME ?? '';
  if (env.GITHUB_ACTIONS !== 'true' || !env.GITHUB_EVENT_PATH || !name) return {};
  let payload: Record<string, unknown>;
  try {
    const parsed = JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as unknown;
    payload = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return { trust: { untrusted: true, why: `the event file ${env.GITHUB_EVENT_PATH} could not be read, so its author is not known` } };
  }
  const event = snapshot(name, payload);
  return { event, trust: await trustOf(name, payload, event.author, env) };
}

async function trustOf(name: string, payload: Record<string, unknown>, author: string, env: NodeJS.ProcessEnv): Promise<EventTrust> {
  const an = /^[aeiou]/.test(name) ? 'an' : 'a';
  if (name === 'pull_request_target') return { untrusted: true, why: "a pull_request_target event: the pull request's text and code are its author's" };
  const pull = field(payload, 'pull_request');
  if (PULL_EVENTS.has(name) && pull) {
    const head = text(field(field(pull, 'head'), 'repo'), 'full_name');
    const base = text(field(field(pull, 'base'), 'repo'), 'full_name');
    if (field(field(pull, 'head'), 'repo')?.fork === true || (head && base && head !== base))
      return { untrusted: true, why: `a pull request from the fork ${head || '(unknown)'}` };
  }
  if (!AUTHORED_EVENTS.has(name)) return { untrusted: false, why: `${an} ${name} event of the repository's own` };
  if (!author) return { untrusted: true, why: `${an} ${name} event whose author is not known` };
  const api = GitHubApi.fromEnv(env);
  const repository = env.GITHUB_REPOSITORY;
  if (typeof api === 'string' || !repository)
    return { untrusted: true, why: `${an} ${name} by @${author}, whose permission could not be asked (no GITHUB_TOKEN)` };
  try {
    const { level, mayWrite } = await permissionOf(api, repository, author);
    return mayWrite
      ? { untrusted: false, why: `${an} ${name} by @${author}, who has ${level} permission` }
      : { untrusted: true, why: `${an} ${name} by @${author}, who has ${level} permission` };
  } catch (e) {
    if (!(e instanceof GitHubUnavailable)) throw e;
    return { untrusted: true, why: `${an} ${name} by @${author}, whose permission GitHub did not say (${e.message})` };
  }
}

function snapshot(name: string, payload: Record<string, unknown>): EventSnapshot {
  const subject = field(payload, 'pull_request') ?? field(payload, 'issue') ?? field(payload, 'discussion');
  const comment = field(payload, 'comment') ?? field(payload, 'review');
  const who = field(comment ?? subject ?? {}, 'user') ?? field(payload, 'sender');
  return { event_name: name, title: text(subject, 'title'), body: text(subject, 'body'), comment: text(comment, 'body'), author: text(who, 'login') };
}

function field(value: Record<string, unknown> | undefined, key: string): Record<string, unknown> | undefined {
  const v = value?.[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function text(value: Record<string, unknown> | undefined, key: string): string {
  const v = value?.[key];
  return typeof v === 'string' ? v : '';
}
