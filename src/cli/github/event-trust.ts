import { readFileSync } from 'node:fs';
import { field, type Payload, text } from './event-payload.js';
import { FOLLOWED_PULL_ENV, followedPull } from './followed-pull.js';
import { GitHubApi, GitHubUnavailable, permissionOf } from './github-api.js';
import { UsageError } from '../usage-error.js';

/** The event that started the job, as it was then (the `github.*` of expressions): frozen in the session header. */
export interface EventSnapshot {
  event_name: string;
  title: string;
  body: string;
  comment: string;
  author: string;
}

/**
 * Whether the run's event is a stranger's, and why (docs/security.md: untrusted content). It is
 * when any of its texts is: each text is trusted by its own author. `own` names the `github.*`
 * texts that are nonetheless the repository's own (a maintainer's comment on a stranger's issue).
 */
export interface EventTrust {
  untrusted: boolean;
  why: string;
  own?: string[];
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

/** One text of the event and who wrote it. */
interface Authored {
  fields: string[];
  what: string;
  author: string;
}

/**
 * In GitHub Actions: what the event says (title, body, the comment, its author), and whether its
 * text and code are a stranger's (fail closed: what GitHub does not say is a stranger's). A
 * `pull_request_target` event, a pull request (or a comment on one) whose head is a fork or not
 * known, a `workflow_run` of a run whose code is not the repository's, and a text whose author
 * GitHub does not say may write to the repository are. `head`: the head commit of the pull
 * request a comment was made on, as GitHub says it (a vote is bound to it). Outside Actions, or
 * with no event file: nothing to snapshot, and the run is the maintainer's.
 */
export async function eventTrust(env: NodeJS.ProcessEnv): Promise<{ event?: EventSnapshot; trust?: EventTrust; head?: string; pull?: number }> {
  const name = env.GITHUB_EVENT_NAME ?? '';
  if (env.GITHUB_ACTIONS !== 'true' || !env.GITHUB_EVENT_PATH || !name) return {};
  let payload: Payload;
  try {
    const parsed = JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) as unknown;
    payload = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Payload) : {};
  } catch {
    return { trust: { untrusted: true, why: `the event file ${env.GITHUB_EVENT_PATH} could not be read, so its author is not known` } };
  }
  const asker = new Asker(env);
  const pull = await pullOf(name, payload, asker, env);
  const event = snapshot(name, payload, pull.followed ? pull.value : undefined);
  const code = codeTrust(name, payload, pull, env.GITHUB_REPOSITORY);
  const head = pull.asked ? text(field(pull.value, 'head'), 'sha') : '';
  const trust = code ?? (await textsTrust(name, payload, pull.value, asker));
  return { event, trust, ...(/^[0-9a-f]{40}$/.test(head) ? { head } : {}), ...(pull.followed ? { pull: pull.followed } : {}) };
}

/**
 * The pull request the event is about: in the event, or, for a comment on one, as GitHub says it
 * (`asked`); for a workflow_run job given the Action's `pull-request`, the one the followed run ran (`followed`: its number).
 */
async function pullOf(
  name: string,
  payload: Payload,
  asker: Asker,
  env: NodeJS.ProcessEnv,
): Promise<{ value?: Payload; asked?: boolean; unknown?: string; followed?: number }> {
  const given = env[FOLLOWED_PULL_ENV]?.trim();
  if (given) {
    if (name !== 'workflow_run') throw new UsageError(`pull-request names the pull request a workflow_run job reviews; this job's event is ${name}`);
    const followed = await followedPull(payload, given, env);
    if ('moved' in followed) throw new UsageError(followed.moved);
    if ('refused' in followed) throw new UsageError(followed.refused);
    return { value: followed.pull, asked: true, followed: followed.number };
  }
  const inEvent = field(payload, 'pull_request');
  if (inEvent) return { value: inEvent };
  const issue = field(payload, 'issue');
  if (name !== 'issue_comment' || !issue || issue.pull_request === undefined || issue.pull_request === null) return {};
  const number = issue.number;
  if (!(Number.isSafeInteger(number) && (number as number) > 0)) return { unknown: 'a comment on a pull request whose number the event does not say' };
  const answer = await asker.pull(number as number);
  return typeof answer === 'string' ? { unknown: answer } : { value: answer, asked: true };
}

/** Whether the code (and so every text) of the event is a stranger's; undefined when it is the repository's own. */
function codeTrust(name: string, payload: Payload, pull: { value?: Payload; unknown?: string }, repository: string | undefined): EventTrust | undefined {
  const an = /^[aeiou]/.test(name) ? 'an' : 'a';
  if (name === 'pull_request_target') return { untrusted: true, why: "a pull_request_target event: the pull request's text and code are its author's" };
  if (pull.unknown) return { untrusted: true, why: `${an} ${name} on a pull request GitHub did not say (${pull.unknown})` };
  if (name === 'workflow_run') {
    const run = field(payload, 'workflow_run');
    const head = text(field(run, 'head_repository'), 'full_name');
    const base = text(field(payload, 'repository'), 'full_name') || repository || '';
    if (!head || !base) return { untrusted: true, why: 'a workflow_run of a run whose repository is not known' };
    if (head !== base) return { untrusted: true, why: `a workflow_run of a run of the fork ${head}` };
    return undefined;
  }
  if (!pull.value || !(PULL_EVENTS.has(name) || name === 'issue_comment')) return undefined;
  const headRepo = field(field(pull.value, 'head'), 'repo');
  const head = text(headRepo, 'full_name');
  const base = text(field(field(pull.value, 'base'), 'repo'), 'full_name') || repository || '';
  if (!head || !base) return { untrusted: true, why: 'a pull request whose head repository is not known (a deleted fork)' };
  if (headRepo?.fork === true || head !== base) return { untrusted: true, why: `a pull request from the fork ${head}` };
  return undefined;
}

/** The event's texts, each trusted by its author: a stranger's when any is, with the texts that are the repository's own named. */
async function textsTrust(name: string, payload: Payload, pull: Payload | undefined, asker: Asker): Promise<EventTrust> {
  const an = /^[aeiou]/.test(name) ? 'an' : 'a';
  if (!AUTHORED_EVENTS.has(name)) return { untrusted: false, why: `${an} ${name} event of the repository's own` };
  const subject = pull ?? field(payload, 'pull_request') ?? field(payload, 'issue') ?? field(payload, 'discussion');
  const comment = field(payload, 'comment') ?? field(payload, 'review');
  const kind = field(payload, 'discussion') ? 'discussion' : pull || field(payload, 'pull_request') ? 'pull request' : 'issue';
  const texts: Authored[] = [];
  if (comment) texts.push({ fields: ['comment'], what: `${an} ${name}`, author: text(field(comment, 'user'), 'login') });
  if (subject) texts.push({ fields: ['title', 'body'], what: comment ? `the ${kind}` : `${an} ${name}`, author: text(field(subject, 'user'), 'login') });
  if (texts.length === 0) texts.push({ fields: ['title', 'body', 'comment'], what: `${an} ${name}`, author: text(field(payload, 'sender'), 'login') });
  const verdicts = await Promise.all(byAuthor(texts).map(async (t) => ({ ...t, ...(await asker.trustOf(t)) })));
  const strangers = verdicts.filter((v) => v.untrusted);
  if (strangers.length === 0) return { untrusted: false, why: verdicts.map((v) => v.why).join('; ') };
  const own = verdicts.filter((v) => !v.untrusted).flatMap((v) => v.fields);
  return { untrusted: true, why: strangers.map((v) => v.why).join('; '), ...(own.length ? { own } : {}) };
}

/** The texts one author wrote, as one: the first's description, every field. */
function byAuthor(texts: Authored[]): Authored[] {
  const by = new Map<string, Authored>();
  for (const t of texts) {
    const same = by.get(t.author.toLowerCase());
    if (same) same.fields.push(...t.fields);
    else by.set(t.author.toLowerCase(), { ...t, fields: [...t.fields] });
  }
  return [...by.values()];
}

/** GitHub, asked once per question: permissions by login, the pull request of a comment. */
class Asker {
  private readonly api: GitHubApi | string;
  private readonly repository: string | undefined;
  private readonly levels = new Map<string, Promise<{ level: string; mayWrite: boolean } | GitHubUnavailable>>();

  constructor(env: NodeJS.ProcessEnv) {
    this.api = GitHubApi.fromEnv(env);
    this.repository = env.GITHUB_REPOSITORY;
  }

  async trustOf(t: Authored): Promise<{ untrusted: boolean; why: string }> {
    if (!t.author) return { untrusted: true, why: `${t.what} whose author is not known` };
    if (typeof this.api === 'string' || !this.repository)
      return { untrusted: true, why: `${t.what} by @${t.author}, whose permission could not be asked (no GITHUB_TOKEN)` };
    const key = t.author.toLowerCase();
    if (!this.levels.has(key)) this.levels.set(key, permissionOf(this.api, this.repository, t.author).catch(unavailable));
    const answer = await this.levels.get(key)!;
    if (answer instanceof GitHubUnavailable)
      return { untrusted: true, why: `${t.what} by @${t.author}, whose permission GitHub did not say (${answer.message})` };
    return { untrusted: !answer.mayWrite, why: `${t.what} by @${t.author}, who has ${answer.level === 'none' ? 'no' : answer.level} permission` };
  }

  /** The pull request `number` as GitHub says it, or why it could not be had. */
  async pull(number: number): Promise<Payload | string> {
    if (typeof this.api === 'string' || !this.repository) return 'no GITHUB_TOKEN to ask GitHub with';
    try {
      return (await this.api.get(`/repos/${this.repository}/pulls/${number}`)) ?? `pull request #${number} was not found`;
    } catch (e) {
      if (e instanceof GitHubUnavailable) return e.message;
      throw e;
    }
  }
}

function unavailable(e: unknown): GitHubUnavailable {
  if (e instanceof GitHubUnavailable) return e;
  throw e;
}

/** `followed`: the pull request a workflow_run job reviews, whose title and body the event itself does not hold. */
function snapshot(name: string, payload: Payload, followed?: Payload): EventSnapshot {
  const subject = followed ?? field(payload, 'pull_request') ?? field(payload, 'issue') ?? field(payload, 'discussion');
  const comment = field(payload, 'comment') ?? field(payload, 'review');
  const who = field(comment ?? subject ?? {}, 'user') ?? field(payload, 'sender');
  return { event_name: name, title: text(subject, 'title'), body: text(subject, 'body'), comment: text(comment, 'body'), author: text(who, 'login') };
}
