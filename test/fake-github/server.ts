import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeComment {
  id: number;
  body: string;
  html_url: string;
  user: { login: string };
}

/** Who a test token is, as GitHub says of GITHUB_TOKEN. */
export const BOT_LOGIN = 'github-actions[bot]';

export interface FakeGitHub {
  url: string;
  comments: FakeComment[];
  requests: { method: string; path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

/**
 * The part of GitHub's API the pull request comment uses: GraphQL's viewer (who the token is),
 * and the REST calls that list, create and update the comments of an issue or pull request. Scripted behaviour stays in tests.
 */
export async function startFakeGitHub(repository: string, issue: number, existing: (string | { body: string; login: string })[] = []): Promise<FakeGitHub> {
  const comments: FakeComment[] = [];
  const requests: FakeGitHub['requests'] = [];
  let ids = 100;
  let server: ReturnType<typeof createServer>;
  const add = (body: string, login = BOT_LOGIN) => {
    const id = ++ids;
    const comment = { id, body, html_url: `https://github.example/${repository}/pull/${issue}#issuecomment-${id}`, user: { login } };
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
      const list = `/repos/${repository}/issues/${issue}/comments`;
      if (req.method === 'GET' && path === list) return send(200, comments);
      if (req.method === 'POST' && path === list) return send(201, add(JSON.parse(raw).body));
      const update = new RegExp(`^/repos/${repository}/issues/comments/(\\d+)$`).exec(path);
      const found = update && comments.find((c) => c.id === Number(update[1]));
      if (req.method === 'PATCH' && found) {
        found.body = JSON.parse(raw).body;
        return send(200, found);
      }
      send(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    comments,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
