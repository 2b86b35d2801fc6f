import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeComment {
  id: number;
  body: string;
  html_url: string;
  user: { login: string };
  created_at: string;
  updated_at: string;
}

/** What GitHub says of people when a vote is checked: permissions, teams, the pull request's head; `fail` makes every such answer a 500 or none at all. */
export interface FakePeople {
  permissions: Record<string, string>;
  /** `org/team` → its active members. */
  teams: Record<string, string[]>;
  /** `org/team` → those invited who have not accepted yet (GitHub's membership state `pending`). */
  pending?: Record<string, string[]>;
  head?: string;
  /** The repository the pull request's head is in: the repository itself unless given; null for a deleted fork. */
  headRepo?: string | null;
  /** Who opened the pull request. */
  pullAuthor?: string;
  /** The pull request's branch, title and body (a branch `feature`, no text, unless given). */
  pull?: { ref?: string; title?: string; body?: string };
  fail?: 'error' | 'silent';
}

/** Who a test token is, as GitHub says of GITHUB_TOKEN. */
export const BOT_LOGIN = 'github-actions[bot]';

/** An artifact a workflow run uploaded (actions/upload-artifact), with the files it holds. */
export interface FakeArtifact {
  id: number;
  name: string;
  workflowRun: number;
  headSha: string;
  createdAt: string;
  expired: boolean;
  files: Record<string, string>;
  /** The repository whose code the uploading run ran: the repository's own (1) unless a fork's pull request uploaded it; null: not said (older GHES). */
  headRepositoryId?: number | null;
  /** The branch the uploading run ran on (default: the repository's default branch, main). */
  headBranch?: string;
}

/** A check run as the Checks API keeps it. */
export interface FakeCheckRun {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  output: { title?: string; summary?: string };
  html_url: string;
  app: { slug: string };
}

export interface FakeGitHub {
  url: string;
  comments: FakeComment[];
  /** Check runs made through the Checks API, by any commit. */
  checkRuns: FakeCheckRun[];
  /** Who added which label to the pull request, oldest first (its issue events). */
  labelled: { label: string; by: string }[];
  /** The repository's artifacts, newest last: a test uploads and downloads them as the artifact actions would. */
  artifacts: FakeArtifact[];
  requests: { method: string; path: string; authorization: string | undefined }[];
  people: FakePeople;
  /** A comment by `login`, as a person would write it. */
  comment(body: string, login: string): FakeComment;
  close(): Promise<void>;
}

/**
 * The part of GitHub's API the pull request comment uses: GraphQL's viewer (who the token is),
 * and the REST calls that list, create and update the comments of an issue or pull request. Scripted behaviour stays in tests.
 */
export async function startFakeGitHub(repository: string, issue: number, existing: (string | { body: string; login: string })[] = []): Promise<FakeGitHub> {
  const comments: FakeComment[] = [];
  const checkRuns: FakeCheckRun[] = [];
  const labelled: FakeGitHub['labelled'] = [];
  const artifacts: FakeArtifact[] = [];
  const requests: FakeGitHub['requests'] = [];
  let ids = 100;
  let server: ReturnType<typeof createServer>;
  const people: FakePeople = { permissions: {}, teams: {} };
  const add = (body: string, login = BOT_LOGIN) => {
    const id = ++ids;
    const at = new Date().toISOString();
    const comment = {
      id,
      body,
      html_url: `https://github.example/${repository}/pull/${issue}#issuecomment-${id}`,
      user: { login },
      created_at: at,
      updated_at: at,
    };
    comments.push(comment);
    return comment;
  };
  for (const c of existing) typeof c === 'string' ? add(c, 'a-reviewer') : add(c.body, c.login);
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (!/^(token|Bearer) ghs_test_/.test(req.headers.authorization ?? '')) return send(401, { message: 'Bad credentials' });
      if (req.method === 'POST' && path === '/graphql') return send(200, { data: { viewer: { login: BOT_LOGIN } } });
      if (req.method === 'GET' && path === `/repos/${repository}`) return send(200, { full_name: repository, default_branch: 'main' });
      if (req.method === 'GET' && path === `/repos/${repository}/actions/artifacts`) {
        // Newest first, as GitHub lists them, a page at a time.
        const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
        const perPage = Math.min(100, Number(query.get('per_page') ?? 30));
        const page = Number(query.get('page') ?? 1);
        const all = [...artifacts].reverse();
        const slice = all.slice((page - 1) * perPage, page * perPage);
        const next = page * perPage < all.length ? `<${url}${path}?per_page=${perPage}&page=${page + 1}>; rel="next"` : undefined;
        res.writeHead(200, { 'content-type': 'application/json', ...(next ? { link: next } : {}) });
        return res.end(
          JSON.stringify({
            total_count: all.length,
            artifacts: slice.map((a) => ({
              id: a.id,
              name: a.name,
              expired: a.expired,
              created_at: a.createdAt,
              size_in_bytes: Object.values(a.files).reduce((n, f) => n + f.length, 0),
              workflow_run: {
                id: a.workflowRun,
                head_sha: a.headSha,
                head_branch: a.headBranch ?? 'main',
                repository_id: 1,
                ...(a.headRepositoryId === null ? {} : { head_repository_id: a.headRepositoryId ?? 1 }),
              },
            })),
          }),
        );
      }
      const asked = peopleAnswer(req.method ?? '', path);
      if (asked !== undefined) {
        if (people.fail === 'silent') return; // never answers
        if (people.fail === 'error') return send(500, { message: 'Server Error' });
        return asked ? send(200, asked) : send(404, { message: 'Not Found' });
      }
      if (req.method === 'GET' && path === `/repos/${repository}/issues/${issue}/events`)
        return send(
          200,
          labelled.map((l, i) => ({ id: i + 1, event: 'labeled', label: { name: l.label }, actor: { login: l.by } })),
        );
      const checksOf = new RegExp(`^/repos/${repository}/commits/([0-9a-f]+)/check-runs$`).exec(path);
      if (req.method === 'GET' && checksOf) {
        const name = new URLSearchParams((req.url ?? '').split('?')[1] ?? '').get('check_name');
        const found = checkRuns.filter((c) => c.head_sha === checksOf[1] && (name === null || c.name === name));
        return send(200, { total_count: found.length, check_runs: found });
      }
      if (req.method === 'POST' && path === `/repos/${repository}/check-runs`) {
        const body = JSON.parse(raw) as Omit<FakeCheckRun, 'id' | 'html_url' | 'app'>;
        const id = ++ids;
        const made: FakeCheckRun = {
          ...body,
          conclusion: body.conclusion ?? null,
          id,
          html_url: `https://github.example/${repository}/runs/${id}`,
          app: { slug: 'github-actions' },
        };
        checkRuns.push(made);
        return send(201, made);
      }
      const checkRun = new RegExp(`^/repos/${repository}/check-runs/(\\d+)$`).exec(path);
      const run = checkRun && checkRuns.find((c) => c.id === Number(checkRun[1]));
      if (req.method === 'PATCH' && run) {
        Object.assign(run, JSON.parse(raw));
        return send(200, run);
      }
      const list = `/repos/${repository}/issues/${issue}/comments`;
      if (req.method === 'GET' && path === list) return send(200, comments);
      if (req.method === 'POST' && path === list) return send(201, add(JSON.parse(raw).body));
      const update = new RegExp(`^/repos/${repository}/issues/comments/(\\d+)$`).exec(path);
      const found = update && comments.find((c) => c.id === Number(update[1]));
      if (req.method === 'PATCH' && found) {
        found.body = JSON.parse(raw).body;
        found.updated_at = new Date().toISOString();
        return send(200, found);
      }
      send(404, { message: 'Not Found' });
    });
  });
  /** The answer to a GET about people (null: 404), or undefined when the request is not one. */
  function peopleAnswer(method: string, path: string): object | null | undefined {
    if (method !== 'GET') return undefined;
    const permission = new RegExp(`^/repos/${repository}/collaborators/([^/]+)/permission$`).exec(path);
    if (permission) {
      const level = people.permissions[permission[1]!.toLowerCase()];
      return level ? { permission: level, user: { login: permission[1] } } : null;
    }
    const membership = /^\/orgs\/([^/]+)\/teams\/([^/]+)\/memberships\/([^/]+)$/.exec(path);
    if (membership) {
      const members = people.teams[`${membership[1]}/${membership[2]}`] ?? [];
      if (people.pending?.[`${membership[1]}/${membership[2]}`]?.includes(membership[3]!)) return { state: 'pending', role: 'member' };
      return members.includes(membership[3]!) ? { state: 'active', role: 'member' } : null;
    }
    if (path === `/repos/${repository}/pulls/${issue}`) {
      if (!people.head) return null;
      const repo = people.headRepo === null ? null : { full_name: people.headRepo ?? repository, fork: (people.headRepo ?? repository) !== repository };
      return {
        number: issue,
        title: people.pull?.title ?? '',
        body: people.pull?.body ?? '',
        head: { sha: people.head, ref: people.pull?.ref ?? 'feature', repo },
        base: { repo: { full_name: repository } },
        user: { login: people.pullAuthor ?? 'octocat' },
      };
    }
    const comment = new RegExp(`^/repos/${repository}/issues/comments/(\\d+)$`).exec(path);
    if (comment) return comments.find((c) => c.id === Number(comment[1])) ?? null;
    return undefined;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    comments,
    checkRuns,
    labelled,
    artifacts,
    requests,
    people,
    comment: (body, login) => add(body, login),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
