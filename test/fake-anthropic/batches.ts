import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The Message Batches API as the fake serves it (DESIGN.md §22): create, retrieve, results (JSONL
 * at the batch's `results_url`), cancel. A batch ends `endsAfterMs` after it was created (the real
 * API: most within the hour, at most 24 h); until then it is `in_progress` and has no results.
 */
export interface BatchOptions {
  /** How long after its creation a batch ends. */
  endsAfterMs?: number;
  /** The API's limits on one batch: refused with 400 past them. */
  maxRequests?: number;
  /** Every batch endpoint answers this error (with a short retry-after, so that the SDK's retries are quick). */
  failWith?: { status: number; type: string };
  /** How long creating a batch takes (an upload of many requests): the batch exists, and is answered, only then. */
  createDelayMs?: number;
}

/** One request's result, as the results file gives it. */
export type BatchResult =
  | { type: 'succeeded'; message: unknown }
  | { type: 'errored'; error: { type: 'error'; error: { type: string; message: string } } }
  | { type: 'canceled' }
  | { type: 'expired' };

export interface FakeBatch {
  id: string;
  createdAt: number;
  endsAt: number;
  canceledAt?: number;
  requests: { custom_id: string; params: Record<string, unknown> }[];
  /** Each request's result, decided when the batch was created and told once it ended. */
  results: Map<string, BatchResult>;
  /** How often the batch was retrieved: a parked run's resume looks once, and goes. */
  retrieved: number;
}

const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

export class FakeBatches {
  readonly batches: FakeBatch[] = [];
  /** Batches whose creation is under way (\`createDelayMs\`). */
  creating = 0;
  private ids = 0;

  constructor(
    private readonly options: BatchOptions,
    /** The result of one request of a batch, as an ordinary call of the same request would answer. */
    private readonly answer: (params: Record<string, unknown>, batchId: string) => BatchResult,
    /** Every request of a new batch was answered. */
    private readonly created: () => void = () => {},
  ) {}

  /** Answers a request to the batch endpoints; false when the request is for another endpoint. */
  handle(req: IncomingMessage, raw: string, res: ServerResponse, baseUrl: string): boolean {
    const path = (req.url ?? '').split('?')[0]!;
    const match = /^\/v1\/messages\/batches(?:\/([^/]+)(?:\/(results|cancel))?)?$/.exec(path);
    if (!match) return false;
    const [, id, action] = match;
    const send = (status: number, body: unknown): true => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_batch_${this.ids}` });
      res.end(JSON.stringify(body));
      return true;
    };
    const refuse = (status: number, type: string, message: string): true => send(status, { type: 'error', error: { type, message } });
    if (this.options.failWith) {
      res.setHeader('retry-after-ms', '20');
      return refuse(this.options.failWith.status, this.options.failWith.type, 'the batch API fails here');
    }
    if (id === undefined && req.method === 'GET') {
      // Newest first, as the API lists them; after_id pages on.
      const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
      const limit = Math.min(1000, Math.max(1, Number(query.get('limit') ?? 20) || 20));
      const newest = [...this.batches].reverse();
      const after = query.get('after_id');
      const from = after ? newest.findIndex((b) => b.id === after) + 1 : 0;
      const page = newest.slice(from, from + limit).map((b) => this.view(b, baseUrl));
      return send(200, { data: page, has_more: from + limit < newest.length, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null });
    }
    if (id === undefined) {
      if (req.method !== 'POST') return refuse(405, 'invalid_request_error', `${req.method} /v1/messages/batches is not served here`);
      let body: { requests?: unknown };
      try {
        body = JSON.parse(raw) as { requests?: unknown };
      } catch {
        return refuse(400, 'invalid_request_error', 'the body is not JSON');
      }
      const problem = requestsProblem(body.requests, this.options.maxRequests ?? 100_000);
      if (problem) return refuse(400, 'invalid_request_error', problem);
      const requests = body.requests as FakeBatch['requests'];
      if (!this.options.createDelayMs) return send(200, this.view(this.create(requests), baseUrl));
      this.creating++;
      setTimeout(() => {
        this.creating--;
        send(200, this.view(this.create(requests), baseUrl));
      }, this.options.createDelayMs);
      return true;
    }
    return this.handleBatch(req, res, baseUrl, path, id, action, send, refuse);
  }

  private create(requests: FakeBatch['requests']): FakeBatch {
    const now = Date.now();
    const batchId = `msgbatch_${String(++this.ids).padStart(4, '0')}`;
    const batch: FakeBatch = {
      id: batchId,
      createdAt: now,
      endsAt: now + (this.options.endsAfterMs ?? 0),
      requests,
      results: new Map(requests.map((r) => [r.custom_id, this.answer(r.params, batchId)])),
      retrieved: 0,
    };
    this.created();
    this.batches.push(batch);
    return batch;
  }

  private handleBatch(
    req: IncomingMessage,
    res: ServerResponse,
    baseUrl: string,
    path: string,
    id: string,
    action: string | undefined,
    send: (status: number, body: unknown) => true,
    refuse: (status: number, type: string, message: string) => true,
  ): boolean {
    const batch = this.batches.find((b) => b.id === id);
    if (!batch) return refuse(404, 'not_found_error', `no message batch ${id}`);
    if (action === 'cancel' && req.method === 'POST') {
      if (Date.now() < batch.endsAt && batch.canceledAt === undefined) batch.canceledAt = Date.now();
      return send(200, this.view(batch, baseUrl));
    }
    if (action === 'results' && req.method === 'GET') {
      if (!this.ended(batch)) return refuse(400, 'invalid_request_error', `message batch ${id} is still in progress`);
      res.writeHead(200, { 'content-type': 'application/binary' });
      res.end(batch.requests.map((r) => `${JSON.stringify({ custom_id: r.custom_id, result: this.resultOf(batch, r.custom_id) })}\n`).join(''));
      return true;
    }
    if (action === undefined && req.method === 'GET') {
      batch.retrieved++;
      return send(200, this.view(batch, baseUrl));
    }
    return refuse(405, 'invalid_request_error', `${req.method} ${path} is not served here`);
  }

  private ended(batch: FakeBatch): boolean {
    return batch.canceledAt !== undefined || Date.now() >= batch.endsAt;
  }

  private resultOf(batch: FakeBatch, customId: string): BatchResult {
    return batch.canceledAt !== undefined ? { type: 'canceled' } : batch.results.get(customId)!;
  }

  /** The batch as the API describes it. */
  private view(batch: FakeBatch, baseUrl: string) {
    const ended = this.ended(batch);
    const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    for (const r of batch.requests) {
      if (!ended) counts.processing++;
      else counts[countedAs(this.resultOf(batch, r.custom_id))]++;
    }
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      id: batch.id,
      type: 'message_batch',
      processing_status: ended ? 'ended' : batch.canceledAt !== undefined ? 'canceling' : 'in_progress',
      request_counts: counts,
      created_at: iso(batch.createdAt),
      expires_at: iso(batch.createdAt + 24 * 3_600_000),
      ended_at: ended ? iso(Math.min(batch.endsAt, batch.canceledAt ?? Number.POSITIVE_INFINITY)) : null,
      cancel_initiated_at: batch.canceledAt === undefined ? null : iso(batch.canceledAt),
      archived_at: null,
      results_url: ended ? `${baseUrl}/v1/messages/batches/${batch.id}/results` : null,
    };
  }
}

/** What the real API refuses about a batch's requests: none, too many, a custom_id that is not one or is used twice, no params. */
function requestsProblem(requests: unknown, max: number): string | undefined {
  if (!Array.isArray(requests) || requests.length === 0) return 'requests: a batch needs at least one request';
  if (requests.length > max) return `requests: a batch holds at most ${max} requests; this one has ${requests.length}`;
  const seen = new Set<string>();
  for (const [i, r] of requests.entries()) {
    const { custom_id: id, params } = (r ?? {}) as { custom_id?: unknown; params?: unknown };
    if (typeof id !== 'string' || !CUSTOM_ID.test(id)) return `requests.${i}.custom_id: 1 to 64 letters, digits, _ and -`;
    if (seen.has(id)) return `requests.${i}.custom_id: ${id} is used twice in this batch`;
    seen.add(id);
    if (typeof params !== 'object' || params === null) return `requests.${i}.params: the request's parameters are missing`;
  }
  return undefined;
}

/** Which count a result falls under: a hostile result (a test's \`batchResult\`) of no known type counts as errored, as the API would not send it. */
function countedAs(result: unknown): 'succeeded' | 'errored' | 'canceled' | 'expired' {
  const type = (result as { type?: unknown } | null)?.type;
  return type === 'succeeded' || type === 'canceled' || type === 'expired' ? type : 'errored';
}
