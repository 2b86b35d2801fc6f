import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { cacheMissReason } from './cache-diagnosis.js';
import { PromptCache, type CacheUse, type PromptCacheOptions } from './prompt-cache.js';
import { FakeBatches, type BatchOptions, type BatchResult, type FakeBatch } from './batches.js';
import { betasOf, controlProblem, type Declines, fallbackModel, refusalOf } from './api-controls.js';
import { authProblem, bedrockChunk, bedrockException, bodyProblem, federationAnswer, metadataAnswer, routeOf, sendCloudError, type Wire } from './clouds.js';

/** What the fake API answers to one request. Scripts live in test fixtures, never in src/. */
export interface Reply {
  text?: string;
  /**
   * Tool calls; `id` fixes the tool use id (the server numbers them otherwise). `json` streams
   * that text as the input instead (for an input JSON.stringify could not write).
   */
  tools?: { name: string; input: Record<string, unknown>; id?: string; json?: string }[];
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded';
  /** The summary of a compaction request's compaction block (a compaction request's scripted text becomes it). */
  compaction?: string;
  /** A signed thinking block before the text, as adaptive thinking gives. */
  thinking?: string;
  /** A redacted_thinking block (encrypted thinking) after the thinking block. */
  redactedThinking?: boolean;
  /** With stopReason max_tokens: the last tool call's input is cut off mid-JSON, as the API streams it. */
  cutLastTool?: boolean;
  usage?: { input_tokens: number; output_tokens: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number };
  /** Answer with an HTTP error instead, as the API does for 429, 529 or 500. */
  error?: { status: number; type: string; message?: string; retryAfterMs?: number; retryAfterSeconds?: number };
  /** Start streaming, then send an error event and stop. */
  midStreamError?: { type: string; message?: string };
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer; the client has to give up. */
  hang?: boolean;
  /** In a message batch: the request expired (the batch's 24 hours passed before it was answered). */
  expired?: boolean;
  /** In a message batch: this result line's \`result\` as it is, whatever its shape (a hostile API's). */
  batchResult?: unknown;
}

export interface RecordedRequest {
  /** The wire it came on: Anthropic's API or a cloud's (clouds.ts). */
  wire: Wire;
  /** The model as the request named it: in the body, or in the path for Bedrock and Vertex. */
  modelId: string;
  agent: string;
  /** The agent's n-th request, from 1. */
  call: number;
  body: {
    model: string;
    max_tokens: number;
    stream?: boolean;
    system?: { type: string; text: string }[] | string;
    tools?: { name: string }[];
    messages: {
      role: string;
      content: string | { type: string; text?: string; content?: unknown; tool_use_id?: string; is_error?: boolean; [k: string]: unknown }[];
    }[];
    thinking?: { type: string; budget_tokens?: number; display?: string };
    output_config?: { effort?: string; task_budget?: { type: string; total: number; remaining?: number } };
    fallbacks?: 'default' | { model: string }[];
    compaction?: { type: string; instructions?: string };
    speed?: string;
  };
  bytes: number;
  receivedAt: number;
  answeredAt?: number;
  /** When the client closed the connection before the answer was whole (an aborted call). */
  droppedAt?: number;
  /** The id of the message that answered it. */
  responseId?: string;
  /** The message batch it came in (the Message Batches API), if it came in one. */
  batch?: string;
  /** With `promptCache`: what the request read from the cache and wrote to it. */
  cache?: Omit<CacheUse, 'started'>;
  headers: IncomingMessage['headers'];
}

/** A reply, or a function that makes one from the request. */
export type ReplyFor = Reply | ((request: RecordedRequest) => Reply);

/** Per agent: replies in order, or one function for every request. */
export type Script = Record<string, ReplyFor[] | ((request: RecordedRequest) => Reply)>;

export interface FakeAnthropic {
  url: string;
  requests: RecordedRequest[];
  of(agent: string): RecordedRequest[];
  /** Requests refused with 429 for a rate limit. */
  refusals: number;
  /** Requests refused for their credentials, on any wire. */
  authFailures: string[];
  /** The message batches created (with `batches`), in order. */
  batches: FakeBatch[];
  /** Requests to the free token-counting endpoint (`/v1/messages/count_tokens`), with the count each was given. */
  counts: { agent: string; body: Record<string, unknown>; tokens: number }[];
  close(): Promise<void>;
}

const AGENT = /You are @([A-Za-z0-9_-]+),/;
/** Whose request it is, by its system prompt: an agent's names it; a rubric grader's scoring call is `(grader)` (docs/graders.md). */
const agentOf = (systemText: string) => AGENT.exec(systemText)?.[1] ?? (systemText.startsWith('You grade the work of a team') ? '(grader)' : '(unknown)');

/** The key the fake API accepts, as `x-api-key` or a bearer token; any other gets 401. */
export const FAKE_API_KEY_PREFIX = 'sk-ant-test-';

export interface FakeOptions {
  latencyMs?: number;
  /**
   * The longest prompt accepted, in tokens (the request's bytes / 4, as the fake counts input
   * tokens); a longer one is refused as the real API refuses it: 400 "prompt is too long".
   */
  maxPromptTokens?: number;
  /**
   * Limits per API key, as the real API keeps them: a token bucket per dimension that holds
   * `limit` and refills `limit` every `windowMs` (the real API's window is a minute). Every answer
   * carries the `anthropic-ratelimit-*` headers; a request over a limit is refused with 429 and
   * `retry-after`. Input tokens are counted as the request's bytes / 4, output tokens as its max_tokens.
   */
  rateLimits?: Partial<Record<RateDimension, { limit: number; windowMs: number }>>;
  /**
   * The shape of those limits: `bucket` (the default: Anthropic's, refilled continuously), or
   * `sliding`: at most `limit` in any `windowMs`, `-reset` the moment the oldest request in the
   * window leaves it (to the millisecond), as many API gateways keep theirs.
   */
  rateLimiter?: 'bucket' | 'sliding';
  /**
   * Simulate Anthropic's prompt cache (prompt-cache.ts): answers without a scripted `usage` then
   * say what was read from the cache and written to it, as the API does. Off, nothing is cached.
   */
  promptCache?: PromptCacheOptions;
  /** Serve the Message Batches API (batches.ts): each request of a batch is answered by the script, as a call would be. */
  batches?: BatchOptions;
  /** Models that decline every request (api-controls.ts): a refusal, or the answer of the request's first fallback that does not decline. */
  declines?: Declines;
}

export type RateDimension = 'requests' | 'input-tokens' | 'output-tokens';

export async function startFakeAnthropic(script: Script, options: FakeOptions = {}): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = [];
  const queues = new Map(Object.entries(script).map(([agent, s]) => [agent, Array.isArray(s) ? [...s] : s]));
  const sockets = new Set<Socket>();
  let ids = 0;
  const buckets = bucketsOf(options.rateLimits ?? {}, options.rateLimiter ?? 'bucket');
  let refusals = 0;
  const authFailures: string[] = [];
  const counts: FakeAnthropic['counts'] = [];
  /** Access tokens the fake issued: Google's metadata server's, and Anthropic's token endpoint's. */
  const issued = new Set<string>();
  const promptCache = options.promptCache ? new PromptCache(options.promptCache) : undefined;

  let url = '';
  /** What the batch being created wrote to the prompt cache: readable once every request of it was read (see below). */
  let batchWrites: (() => void)[] = [];
  /**
   * A request of a batch, answered as the same call would be: recorded, and its reply taken from
   * the script. With `promptCache`, it reads what earlier calls and batches wrote, as the API serves
   * cache hits in batches; the requests of one batch are processed together, so none reads what
   * another of the same batch writes (the API's hits inside a batch are best effort: the fake
   * gives none).
   */
  const batchAnswer = (params: Record<string, unknown>, batchId: string): BatchResult => {
    const body = params as unknown as RecordedRequest['body'];
    const systemText = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n');
    const agent = agentOf(systemText);
    const bytes = Buffer.byteLength(JSON.stringify(params));
    const recorded: RecordedRequest = {
      wire: 'anthropic',
      modelId: body.model,
      agent,
      call: requests.filter((r) => r.agent === agent).length + 1,
      body,
      bytes,
      receivedAt: Date.now(),
      headers: {},
      batch: batchId,
    };
    requests.push(recorded);
    const queue = queues.get(agent);
    const next = typeof queue === 'function' ? queue : queue?.shift();
    const reply = typeof next === 'function' ? next(recorded) : next;
    if (!reply)
      return {
        type: 'errored',
        error: { type: 'error', error: { type: 'invalid_request_error', message: `fake server: no scripted reply left for @${agent}` } },
      };
    if (reply.expired) return { type: 'expired' };
    if ('batchResult' in reply) return reply.batchResult as BatchResult;
    if (reply.error) return { type: 'errored', error: { type: 'error', error: { type: reply.error.type, message: reply.error.message ?? reply.error.type } } };
    const cacheUse = reply.usage ? undefined : promptCache?.use(body);
    if (cacheUse) {
      recorded.cache = { read: cacheUse.read, written: cacheUse.written, written1h: cacheUse.written1h, writes: cacheUse.writes };
      batchWrites.push(cacheUse.started);
    }
    const message = messageOf(reply, body, `msg_${++ids}`, () => `toolu_${process.pid}_${++toolIds}`, bytes, cacheUse);
    recorded.responseId = message.id;
    recorded.answeredAt = Date.now();
    return { type: 'succeeded', message };
  };
  const batches = new FakeBatches(options.batches ?? {}, batchAnswer, () => {
    for (const written of batchWrites) written();
    batchWrites = [];
  });

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    if (metadataAnswer(req, res, issued, 'fake-project') || federationAnswer(req, raw, res, issued)) return;
    if (options.batches && (req.url ?? '').startsWith('/v1/messages/batches')) {
      const unauthenticated = authProblem('anthropic', req, raw, issued, FAKE_API_KEY_PREFIX);
      if (unauthenticated) {
        authFailures.push(`anthropic: ${unauthenticated}`);
        return sendCloudError(res, 'anthropic', 401, 'authentication_error', unauthenticated);
      }
      if (batches.handle(req, raw, res, url)) return;
    }
    if (req.method === 'POST' && (req.url ?? '').split('?')[0] === '/v1/messages/count_tokens') {
      const unauthenticated = authProblem('anthropic', req, raw, issued, FAKE_API_KEY_PREFIX);
      if (unauthenticated) return sendCloudError(res, 'anthropic', 401, 'authentication_error', unauthenticated);
      if (options.latencyMs) await new Promise((r) => setTimeout(r, options.latencyMs));
      return countTokens(raw, res, counts);
    }
    const route = routeOf(req.method, req.url ?? '');
    if (!route) return sendCloudError(res, 'anthropic', 404, 'not_found_error', `no route ${req.method} ${req.url}`);
    const { wire } = route;
    const sendError = (r: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}) =>
      sendCloudError(r, wire, status, type, message, headers);
    const body = JSON.parse(raw) as RecordedRequest['body'];
    const misshapen = bodyProblem(wire, req, body as unknown as Record<string, unknown>);
    if (misshapen) return sendError(res, 400, 'invalid_request_error', misshapen);
    if (route.model !== undefined) body.model = route.model;
    if (route.stream) body.stream = true;
    const systemText = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n');
    const agent = agentOf(systemText);
    const recorded: RecordedRequest = {
      wire,
      modelId: body.model,
      agent,
      call: requests.filter((r) => r.agent === agent).length + 1,
      body,
      bytes: Buffer.byteLength(raw),
      receivedAt: Date.now(),
      headers: req.headers,
    };
    // A refused request is counted, not recorded: the agent's calls are numbered as the API answered them.
    const limited = takeFrom(buckets, { requests: 1, 'input-tokens': Math.ceil(recorded.bytes / 4), 'output-tokens': body.max_tokens });
    if (limited.refusedFor !== undefined) {
      refusals++;
      return sendError(res, 429, 'rate_limit_error', `rate limit of ${limited.refusedFor} exceeded`, {
        ...limited.headers,
        'retry-after': String(limited.retryAfterSeconds),
      });
    }
    requests.push(recorded);
    res.on('close', () => {
      if (!res.writableFinished) recorded.droppedAt = Date.now();
    });
    const unauthenticated = authProblem(wire, req, raw, issued, FAKE_API_KEY_PREFIX);
    if (unauthenticated) {
      authFailures.push(`${wire}: ${unauthenticated}`);
      return sendError(res, wire === 'bedrock' ? 403 : 401, 'authentication_error', unauthenticated);
    }
    const promptTokens = Math.ceil(recorded.bytes / 4);
    if (options.maxPromptTokens !== undefined && promptTokens > options.maxPromptTokens) {
      return sendError(res, 400, 'invalid_request_error', `prompt is too long: ${promptTokens} tokens > ${options.maxPromptTokens} maximum`);
    }
    const refused = thinkingProblem(body, sentThinking) ?? controlProblem(body as unknown as Record<string, unknown> & { model: string }, betasOf(req.headers));
    if (refused) return sendError(res, 400, 'invalid_request_error', refused);
    const queue = queues.get(agent);
    const next = typeof queue === 'function' ? queue : queue?.shift();
    const reply = typeof next === 'function' ? next(recorded) : next;
    if (!reply) return sendError(res, 400, 'invalid_request_error', `fake server: no scripted reply left for @${agent} (call ${recorded.call})`);
    if (reply.hang) return;
    const delay = reply.delayMs ?? options.latencyMs ?? 0;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    if (res.destroyed) return;
    recorded.answeredAt = Date.now();
    if (reply.error) {
      const headers: Record<string, string> = {};
      if (reply.error.retryAfterMs !== undefined) headers['retry-after-ms'] = String(reply.error.retryAfterMs);
      if (reply.error.retryAfterSeconds !== undefined) headers['retry-after'] = String(reply.error.retryAfterSeconds);
      return sendError(res, reply.error.status, reply.error.type, reply.error.message ?? reply.error.type, headers);
    }
    const declining = options.declines?.models.includes(body.model) ? options.declines : undefined;
    const fallback = declining ? fallbackModel(body as unknown as Record<string, unknown> & { model: string }, declining) : undefined;
    // The model that answers: the request's, or the fallback the API retried a declined request on.
    const answering = fallback ? { ...body, model: fallback } : body;
    const cacheUse = reply.usage || (declining && !fallback) ? undefined : promptCache?.use(answering);
    if (cacheUse) recorded.cache = { read: cacheUse.read, written: cacheUse.written, written1h: cacheUse.written1h, writes: cacheUse.writes };
    const message: Message =
      declining && !fallback
        ? { id: `msg_${++ids}`, type: 'message', role: 'assistant', model: body.model, stop_sequence: null, ...refusalOf(declining, promptTokens) }
        : messageOf(reply, answering, `msg_${++ids}`, () => `toolu_${process.pid}_${++toolIds}`, raw.length, cacheUse);
    if (fallback) {
      // Each attempt in usage.iterations; a block marks the handoff; the message names the model that answered.
      message.content.unshift({ type: 'fallback', from_model: body.model, to_model: fallback });
      message.usage = {
        ...message.usage,
        iterations: [
          { type: 'message', model: body.model, input_tokens: promptTokens, output_tokens: 0 },
          { type: 'fallback_message', model: fallback, input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens },
        ],
      };
    }
    recorded.responseId = message.id;
    const asked = (body as { diagnostics?: { previous_message_id?: string | null } }).diagnostics;
    if (asked) {
      const earlier = asked.previous_message_id ? requests.find((r) => r.responseId === asked.previous_message_id) : undefined;
      const reason = asked.previous_message_id ? cacheMissReason(body, earlier, cacheUse?.read ?? 0) : null;
      Object.assign(message, { diagnostics: { cache_miss_reason: reason } });
    }
    const thinkingBlocks = JSON.stringify(message.content.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking'));
    for (const b of message.content) if (b.type === 'tool_use') sentThinking.set(b.id, thinkingBlocks);
    if (body.stream) stream(res, message, reply.midStreamError, reply.cutLastTool === true, limited.headers, wire, () => cacheUse?.started());
    else {
      cacheUse?.started();
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': message.id, ...limited.headers });
      res.end(JSON.stringify(message));
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  url = `http://127.0.0.1:${port}`;
  return {
    url,
    batches: batches.batches,
    counts,
    requests,
    of: (agent) => requests.filter((r) => r.agent === agent),
    get refusals() {
      return refusals;
    },
    authFailures,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

type Block =
  | { type: 'fallback'; from_model: string; to_model: string }
  | { type: 'compaction'; content: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; json?: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/** The server's key for thinking signatures: a block changed by the client no longer verifies. */
const SIGNING_KEY = randomBytes(16);
/**
 * The thinking blocks each answer carried, by the ids of its tool calls: a tool loop must send
 * them back unchanged. Shared by every server of a test process, as the API is one service: a
 * resumed run talks to a new server.
 */
const sentThinking = new Map<string, string>();
let toolIds = 0;
const sign = (text: string) => createHmac('sha256', SIGNING_KEY).update(text).digest('base64');

function messageOf(reply: Reply, body: RecordedRequest['body'], id: string, toolId: () => string, requestBytes: number, cache?: CacheUse) {
  const content: Block[] = [];
  // A compaction request (api-controls.ts) is answered with one compaction block: the scripted text is its summary.
  if (body.compaction !== undefined) reply = { text: undefined, usage: reply.usage, compaction: reply.text ?? '' };
  if (reply.compaction !== undefined) content.push({ type: 'compaction', content: reply.compaction });
  if (reply.thinking !== undefined) content.push({ type: 'thinking', thinking: reply.thinking, signature: sign(reply.thinking) });
  if (reply.redactedThinking) {
    const data = randomBytes(24).toString('base64');
    content.push({ type: 'redacted_thinking', data: `${data}.${sign(data)}` });
  }
  if (reply.text !== undefined && reply.text !== '') content.push({ type: 'text', text: reply.text });
  for (const tool of reply.tools ?? [])
    content.push({ type: 'tool_use', id: tool.id ?? toolId(), name: tool.name, input: tool.input, ...(tool.json === undefined ? {} : { json: tool.json }) });
  const stopReason = reply.stopReason ?? (reply.tools?.length ? 'tool_use' : 'end_turn');
  const read = cache?.read ?? 0;
  const written = cache?.written ?? 0;
  const usage = reply.usage ?? {
    input_tokens: Math.max(0, Math.ceil(requestBytes / 4) - read - written),
    output_tokens: Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
    ...(cache ? { cache_creation: { ephemeral_5m_input_tokens: written - cache.written1h, ephemeral_1h_input_tokens: cache.written1h } } : {}),
  };
  // Fast mode says so in its usage (api-controls.ts); it is priced apart.
  const spedUsage = body.speed === 'fast' ? { ...usage, speed: 'fast' } : usage;
  const message: Message = {
    id,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: spedUsage,
  };
  return message;
}

/** A message as the fake answers it. */
interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Block[];
  stop_reason: string;
  stop_sequence: null;
  stop_details?: Record<string, unknown> | null;
  usage: Record<string, unknown> & { input_tokens: number; output_tokens: number };
}

/**
 * What the real API refuses about thinking blocks: one whose signature does not verify (it was
 * changed), and, when a tool loop continues, an assistant turn whose thinking blocks are not
 * exactly those that came with its tool calls (dropped, reordered or altered).
 */
function thinkingProblem(body: RecordedRequest['body'], sent: ReadonlyMap<string, string>): string | undefined {
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== 'assistant' || typeof m.content === 'string') continue;
    for (const b of m.content) {
      if (b.type === 'thinking' && b.signature !== sign(String(b.thinking))) return `messages.${i}.content: invalid signature in thinking block`;
      if (b.type === 'redacted_thinking') {
        const [data, signature] = String(b.data).split('.');
        if (signature !== sign(String(data))) return `messages.${i}.content: invalid redacted_thinking block`;
      }
    }
  }
  const last = body.messages.at(-1);
  const results = typeof last?.content === 'string' ? [] : (last?.content ?? []).filter((b) => b.type === 'tool_result');
  if (results.length === 0) return undefined;
  const assistant = body.messages.at(-2);
  const blocks = typeof assistant?.content === 'string' ? [] : (assistant?.content ?? []);
  const sentWith = sent.get(String(results[0]!.tool_use_id));
  const echoed = JSON.stringify(
    blocks
      .filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking')
      .map((b) => (b.type === 'thinking' ? { type: b.type, thinking: b.thinking, signature: b.signature } : { type: b.type, data: b.data })),
  );
  if (sentWith !== undefined && sentWith !== echoed) {
    return `messages.${body.messages.length - 2}.content: the thinking blocks of the latest assistant message cannot be modified; they must be passed back exactly as they were returned`;
  }
  return undefined;
}

/** The answer streamed as server-sent events, or, on Bedrock, as AWS's event stream. */
function stream(
  res: ServerResponse,
  message: Message,
  midStreamError: Reply['midStreamError'],
  cutLastTool: boolean,
  headers: Record<string, string>,
  wire: Wire,
  started: () => void,
): void {
  const bedrock = wire === 'bedrock';
  res.writeHead(200, {
    'content-type': bedrock ? 'application/vnd.amazon.eventstream' : 'text/event-stream',
    'cache-control': 'no-cache',
    'request-id': message.id,
    ...headers,
  });
  const send = (event: string, data: unknown) => res.write(bedrock ? bedrockChunk(data) : `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  send('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
  started();
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (let i = 0; i < block.text.length; i += 4000) {
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text.slice(i, i + 4000) } });
      }
    } else if (block.type === 'thinking') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.thinking } });
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'redacted_thinking' || block.type === 'fallback' || block.type === 'compaction') {
      send('content_block_start', { type: 'content_block_start', index, content_block: block });
    } else {
      const { json: raw, ...plain } = block;
      const json = raw ?? JSON.stringify(block.input);
      const cut = cutLastTool && index === message.content.length - 1;
      send('content_block_start', { type: 'content_block_start', index, content_block: { ...plain, input: {} } });
      send('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: cut ? json.slice(0, Math.ceil(json.length / 2)) : json },
      });
    }
    send('content_block_stop', { type: 'content_block_stop', index });
  });
  if (midStreamError && bedrock) return void res.end(bedrockException(midStreamError.type, midStreamError.message ?? midStreamError.type));
  if (midStreamError) {
    send('error', { type: 'error', error: { type: midStreamError.type, message: midStreamError.message ?? midStreamError.type } });
    return void res.end();
  }
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: null, stop_details: message.stop_details ?? null },
    usage: { output_tokens: message.usage.output_tokens },
  });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

interface Bucket {
  dimension: RateDimension;
  limit: number;
  windowMs: number;
  tokens: number;
  at: number;
  /** A sliding window's requests in it: when each came and what it took. */
  sliding?: { at: number; amount: number }[];
}

function bucketsOf(limits: NonNullable<FakeOptions['rateLimits']>, shape: 'bucket' | 'sliding'): Bucket[] {
  return Object.entries(limits).map(([dimension, { limit, windowMs }]) => ({
    dimension: dimension as RateDimension,
    limit,
    windowMs,
    tokens: limit,
    at: Date.now(),
    ...(shape === 'sliding' ? { sliding: [] } : {}),
  }));
}

/** What a sliding window has left now, and when a request of `need` fits (the oldest entries leave as they age). */
function slidingLeft(b: Bucket & { sliding: { at: number; amount: number }[] }, now: number, need: number): { left: number; fitsAt: number; resetAt: number } {
  while (b.sliding.length > 0 && b.sliding[0]!.at + b.windowMs <= now) b.sliding.shift();
  const used = b.sliding.reduce((sum, e) => sum + e.amount, 0);
  let fitsAt = now;
  let over = used + Math.min(need, b.limit) - b.limit;
  for (const e of b.sliding) {
    if (over <= 0) break;
    fitsAt = e.at + b.windowMs;
    over -= e.amount;
  }
  return { left: b.limit - used, fitsAt, resetAt: b.sliding.length > 0 ? b.sliding[0]!.at + b.windowMs : now };
}

/**
 * Takes a request's share from every bucket, or from none when one has too little: the headers
 * say what is left after it (or, refused, what is left now), and when each bucket is full again.
 */
function takeFrom(
  buckets: Bucket[],
  need: Record<RateDimension, number>,
): { refusedFor?: RateDimension; retryAfterSeconds: number; headers: Record<string, string> } {
  const now = Date.now();
  for (const b of buckets) {
    if (b.sliding) b.tokens = slidingLeft({ ...b, sliding: b.sliding }, now, 0).left;
    else b.tokens = Math.min(b.limit, b.tokens + ((now - b.at) * b.limit) / b.windowMs);
    b.at = now;
  }
  const short = buckets.find((b) => b.tokens < Math.min(need[b.dimension], b.limit));
  if (!short)
    for (const b of buckets) {
      b.tokens -= need[b.dimension];
      b.sliding?.push({ at: now, amount: need[b.dimension] });
    }
  const headers: Record<string, string> = {};
  for (const b of buckets) {
    const resetAt = b.sliding ? slidingLeft({ ...b, sliding: b.sliding }, now, 0).resetAt : now + Math.ceil(((b.limit - b.tokens) * b.windowMs) / b.limit);
    headers[`anthropic-ratelimit-${b.dimension}-limit`] = String(b.limit);
    headers[`anthropic-ratelimit-${b.dimension}-remaining`] = String(Math.max(0, Math.floor(b.tokens)));
    headers[`anthropic-ratelimit-${b.dimension}-reset`] = new Date(resetAt).toISOString();
  }
  const retryAfterMs = !short
    ? 0
    : short.sliding
      ? slidingLeft({ ...short, sliding: short.sliding }, now, need[short.dimension]).fitsAt - now
      : ((Math.min(need[short.dimension], short.limit) - short.tokens) * short.windowMs) / short.limit;
  return { ...(short ? { refusedFor: short.dimension } : {}), retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)), headers };
}

/**
 * The token-counting endpoint as the API serves it: free, the same shape as a message request
 * without `max_tokens` or `stream` (which it refuses), answering `{ input_tokens }` counted as the
 * fake counts a message's input (the body's bytes / 4).
 */
function countTokens(raw: string, res: ServerResponse, counts: FakeAnthropic['counts']): void {
  const body = JSON.parse(raw) as Record<string, unknown>;
  const extra = ['max_tokens', 'stream', 'metadata', 'stop_sequences', 'temperature'].find((key) => key in body);
  const problem = extra
    ? `${extra}: Extra inputs are not permitted`
    : typeof body.model !== 'string'
      ? 'model: Field required'
      : !Array.isArray(body.messages) || body.messages.length === 0
        ? 'messages: at least one message is required'
        : undefined;
  if (problem) return sendCloudError(res, 'anthropic', 400, 'invalid_request_error', problem);
  const system = body.system;
  const systemText = typeof system === 'string' ? system : Array.isArray(system) ? system.map((b: { text?: string }) => b.text ?? '').join('\n') : '';
  const tokens = Math.ceil(Buffer.byteLength(raw) / 4);
  counts.push({ agent: agentOf(systemText), body, tokens });
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': `count_${counts.length}` });
  res.end(JSON.stringify({ input_tokens: tokens }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The text of the last user message of a request: what the agent was just told. */
export function lastUserText(request: RecordedRequest): string {
  const last = request.body.messages.filter((m) => m.role === 'user').at(-1);
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return last.content
    .map((b) =>
      b.type === 'text' ? (b.text ?? '') : b.type === 'tool_result' ? String(typeof b.content === 'string' ? b.content : JSON.stringify(b.content)) : '',
    )
    .join('\n');
}

/** The tool whose result the request's last message carries, if it carries one. */
export function lastToolResult(request: RecordedRequest): string | undefined {
  const last = request.body.messages.at(-1);
  if (!last || typeof last.content === 'string') return undefined;
  const result = last.content.find((b) => b.type === 'tool_result');
  if (!result) return undefined;
  const assistant = request.body.messages.at(-2);
  const uses = typeof assistant?.content === 'string' ? [] : (assistant?.content ?? []);
  return (uses.find((b) => (b as { id?: string }).id === result.tool_use_id) as { name?: string } | undefined)?.name;
}
