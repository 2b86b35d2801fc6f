import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Readable } from 'node:stream';
import { detached, nothingToDo } from '../../detached.js';

/**
 * One Message Batch for the repeats of a case (`conclave test --live --repeat K`, docs/testing-workflows.md):
 * a server on 127.0.0.1 that the K runs reach as their Anthropic API. What they ask of the Message
 * Batches API in the same moment (within `gatherMs`, or once every run has asked) goes upstream as
 * one batch, each request under an id of its own (the runs' requests are alike, and the API wants
 * each id once in a batch); each run is answered as if the batch were its own, and reads only its
 * own results. Everything else is passed upstream untouched, streams included. It adds no
 * credential: each request goes with the headers its run sent. Only the runs this command started
 * reach it (a secret path in their base URL, compared in constant time), and a batch is taken only
 * in the shape the runs send (docs/security.md: conclave test).
 */
export interface SharedBatches {
  url: string;
  /** The batches made upstream, and how many runs' batches each holds. */
  readonly made: { id: string; members: number; requests: number }[];
  close(): Promise<void>;
}

interface Member {
  /** The id the run knows its batch by. */
  virtual: string;
  real: string;
  /** Upstream custom id → the run's own. */
  ids: Map<string, string>;
  cancelled: boolean;
}

interface Pending {
  requests: { custom_id: string; params: unknown }[];
  headers: Record<string, string>;
  res: ServerResponse;
}

const BATCHES = /^\/v1\/messages\/batches(?:\/([^/?]+)(?:\/(results|cancel))?)?(?:\?.*)?$/;
/** Headers a proxy must not pass on as they came: they describe one hop, or a body fetch() has already decoded. */
const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'content-encoding', 'keep-alive']);

/**
 * Where the runs' batches are kept between processes (an experiment that parks, experiment-runs.ts):
 * a run resumed later by another server finds its batch, and only its own results, under the id it
 * recorded.
 */
export interface KeptMembers {
  load(): unknown;
  /** The members as JSON can hold them: each one's ids as pairs. */
  save(members: readonly unknown[]): void;
}

export async function startSharedBatches(upstream: string, runs: number, gatherMs = 2_000, kept?: KeptMembers): Promise<SharedBatches> {
  const base = upstream.replace(/\/+$/, '');
  const members = new Map<string, Member>(keptMembers(kept?.load()).map((m) => [m.virtual, m]));
  const save = () => kept?.save([...members.values()].map((m) => ({ ...m, ids: [...m.ids] })));
  const made: SharedBatches['made'] = [];
  let pending: Pending[] = [];
  let timer: NodeJS.Timeout | undefined;
  let url = '';
  const secret = randomBytes(24).toString('hex');

  const headersOf = (req: IncomingMessage): Record<string, string> =>
    Object.fromEntries(Object.entries(req.headers).flatMap(([k, v]) => (HOP.has(k) || v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]])));

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  /** The batch as its run sees it: its own id, its results here. */
  const asMember = (batch: Record<string, unknown>, member: Member) => ({
    ...batch,
    id: member.virtual,
    results_url: batch.results_url ? `${url}/v1/messages/batches/${member.virtual}/results` : batch.results_url,
    ...(member.cancelled && batch.processing_status === 'in_progress' ? { processing_status: 'canceling' } : {}),
  });

  async function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    const group = pending;
    pending = [];
    if (group.length === 0) return;
    const ids = group.map(() => new Map<string, string>());
    const requests = group.flatMap((p, m) =>
      p.requests.map((r, i) => {
        const id = `r${made.length}m${m}i${i}`;
        ids[m]!.set(id, r.custom_id);
        return { ...r, custom_id: id };
      }),
    );
    try {
      const answer = await fetch(`${base}/v1/messages/batches`, {
        method: 'POST',
        headers: { ...group[0]!.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ requests }),
      });
      const text = await answer.text();
      if (!answer.ok) {
        for (const p of group) p.res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
        return;
      }
      const batch = JSON.parse(text) as Record<string, unknown> & { id: string };
      made.push({ id: batch.id, members: group.length, requests: requests.length });
      group.forEach((p, m) => {
        const member: Member = { virtual: `${batch.id}_m${m}`, real: batch.id, ids: ids[m]!, cancelled: false };
        members.set(member.virtual, member);
      });
      save();
      group.forEach((p, m) => json(p.res, answer.status, asMember(batch, members.get(`${batch.id}_m${m}`)!)));
    } catch (e) {
      for (const p of group) json(p.res, 502, { type: 'error', error: { type: 'api_error', message: `the batch could not be made: ${(e as Error).message}` } });
    }
  }

  async function upstreamBatch(member: Member, headers: Record<string, string>): Promise<Response> {
    return fetch(`${base}/v1/messages/batches/${member.real}`, { headers });
  }

  async function handle(req: IncomingMessage, res: ServerResponse, body: Buffer, path: string): Promise<void> {
    const match = BATCHES.exec(path);
    const headers = headersOf(req);
    if (match && req.method === 'POST' && !match[1]) {
      const requests = batchRequests(body);
      if (typeof requests === 'string') return json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: requests } });
      pending.push({ requests, headers, res });
      if (pending.length >= runs) return flush();
      // flush answers every run that waits, whatever becomes of the batch: nothing is left to do with its failure.
      timer ??= setTimeout(() => detached(flush(), nothingToDo), gatherMs);
      return;
    }
    const member = match?.[1] ? members.get(match[1]) : undefined;
    if (member && req.method === 'GET' && !match![2]) {
      const answer = await upstreamBatch(member, headers);
      const batch = (await answer.json()) as Record<string, unknown>;
      return json(res, answer.status, answer.ok ? asMember(batch, member) : batch);
    }
    if (member && req.method === 'GET' && match![2] === 'results') {
      const batch = (await (await upstreamBatch(member, headers)).json()) as { results_url?: string };
      if (!batch.results_url) return json(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'the batch has no results yet' } });
      const lines = (await (await fetch(batch.results_url, { headers })).text()).split('\n').filter((l) => l.trim() !== '');
      const own = lines.flatMap((line) => {
        const result = JSON.parse(line) as { custom_id: string };
        const id = member.ids.get(result.custom_id);
        return id === undefined ? [] : [JSON.stringify({ ...result, custom_id: id })];
      });
      res.writeHead(200, { 'content-type': 'application/binary' });
      return void res.end(own.map((l) => `${l}\n`).join(''));
    }
    if (member && req.method === 'POST' && match![2] === 'cancel') {
      member.cancelled = true;
      save();
      // The batch is the others' too: it is cancelled upstream only when every run that shares it has cancelled.
      const all = [...members.values()].filter((m) => m.real === member.real);
      if (all.every((m) => m.cancelled)) await fetch(`${base}/v1/messages/batches/${member.real}/cancel`, { method: 'POST', headers });
      const answer = await upstreamBatch(member, headers);
      return json(res, answer.status, asMember((await answer.json()) as Record<string, unknown>, member));
    }
    return forward(req, res, body, headers, path);
  }

  /** Any other request, passed upstream as it came and answered as upstream answers (a stream as a stream). */
  async function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, headers: Record<string, string>, path: string): Promise<void> {
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    const answer = await fetch(`${base}${path}`, {
      method: req.method ?? 'GET',
      headers,
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }),
      signal: aborted.signal,
    });
    const out: Record<string, string> = {};
    answer.headers.forEach((value, key) => {
      if (!HOP.has(key)) out[key] = value;
    });
    res.writeHead(answer.status, out);
    if (!answer.body) return void res.end();
    Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream)
      .on('error', () => res.destroy())
      .pipe(res);
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = ownPath(req.url ?? '', secret);
      if (path === undefined)
        return json(res, 403, {
          type: 'error',
          error: { type: 'permission_error', message: 'only the runs of this conclave test command may use its batch server' },
        });
      handle(req, res, Buffer.concat(chunks), path).catch((e: unknown) => {
        if (res.headersSent) return void res.destroy();
        json(res, 502, { type: 'error', error: { type: 'api_error', message: `conclave test could not reach the API: ${(e as Error).message}` } });
      });
    });
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  // The runs reach the server under a path only this command knows (in their ANTHROPIC_BASE_URL): another local process cannot use it.
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/${secret}`;
  return {
    url,
    made,
    close: () =>
      new Promise<void>((done) => {
        clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** The path after the command's secret, or undefined when the request does not carry it. */
function ownPath(url: string, secret: string): string | undefined {
  const given = Buffer.from(url.slice(1, 1 + secret.length));
  const wanted = Buffer.from(secret);
  if (url[0] !== '/' || given.length !== wanted.length || !timingSafeEqual(given, wanted)) return undefined;
  const rest = url.slice(1 + secret.length);
  return rest.startsWith('/') ? rest : undefined;
}

/** A run's new batch as conclave's runs post it: a list of requests, each an id and the params of a message; or why not. */
function batchRequests(body: Buffer): Pending['requests'] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'the batch is not JSON';
  }
  const requests = (parsed as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests) || requests.length === 0 || requests.length > 100_000) return 'requests must be a list of 1 to 100,000 requests';
  const shaped = requests.every((r: unknown) => {
    const { custom_id, params } = (r ?? {}) as { custom_id?: unknown; params?: { model?: unknown; messages?: unknown } };
    return typeof custom_id === 'string' && typeof params === 'object' && params !== null && typeof params.model === 'string' && Array.isArray(params.messages);
  });
  return shaped ? (requests as Pending['requests']) : 'each request must be { custom_id, params: { model, messages, … } }';
}

/** The members kept by an earlier server, each checked field by field: one that is not one is dropped. */
function keptMembers(value: unknown): Member[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((m: unknown) => {
    const { virtual, real, ids, cancelled } = (m ?? {}) as Record<string, unknown>;
    const pairs = Array.isArray(ids) && ids.every((p) => Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === 'string'));
    if (typeof virtual !== 'string' || typeof real !== 'string' || !pairs || typeof cancelled !== 'boolean') return [];
    return [{ virtual, real, ids: new Map(ids as [string, string][]), cancelled }];
  });
}
