import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the fake API answers to one request. Scripts live in test fixtures, never in src/. */
export interface Reply {
  text?: string;
  /** Tool calls; `id` fixes the tool use id (the server numbers them otherwise). */
  tools?: { name: string; input: Record<string, unknown>; id?: string }[];
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens';
  usage?: { input_tokens: number; output_tokens: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number };
  /** Answer with an HTTP error instead, as the API does for 429, 529 or 500. */
  error?: { status: number; type: string; message?: string; retryAfterMs?: number; retryAfterSeconds?: number };
  /** Start streaming, then send an error event and stop. */
  midStreamError?: { type: string; message?: string };
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer; the client has to give up. */
  hang?: boolean;
}

export interface RecordedRequest {
  agent: string;
  /** The agent's n-th request, from 1. */
  call: number;
  body: {
    model: string;
    max_tokens: number;
    stream?: boolean;
    system?: { type: string; text: string }[] | string;
    tools?: { name: string }[];
    messages: { role: string; content: string | { type: string; text?: string; content?: unknown; tool_use_id?: string; is_error?: boolean }[] }[];
  };
  bytes: number;
  receivedAt: number;
  answeredAt?: number;
  /** The id of the message that answered it. */
  responseId?: string;
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
  close(): Promise<void>;
}

const AGENT = /You are @([A-Za-z0-9_-]+),/;

/** The key the fake API accepts, as `x-api-key` or a bearer token; any other gets 401. */
export const FAKE_API_KEY_PREFIX = 'sk-ant-test-';

export async function startFakeAnthropic(script: Script, options: { latencyMs?: number } = {}): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = [];
  const queues = new Map(Object.entries(script).map(([agent, s]) => [agent, Array.isArray(s) ? [...s] : s]));
  const sockets = new Set<Socket>();
  let ids = 0;

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) return sendError(res, 404, 'not_found_error', `no route ${req.method} ${req.url}`);
    const body = JSON.parse(raw) as RecordedRequest['body'];
    const systemText = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n');
    const agent = AGENT.exec(systemText)?.[1] ?? '(unknown)';
    const recorded: RecordedRequest = { agent, call: requests.filter((r) => r.agent === agent).length + 1, body, bytes: Buffer.byteLength(raw), receivedAt: Date.now(), headers: req.headers };
    requests.push(recorded);
    const key = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '');
    if (typeof key !== 'string' || !key.startsWith(FAKE_API_KEY_PREFIX)) return sendError(res, 401, 'authentication_error', 'invalid x-api-key');
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
    const message = messageOf(reply, body, `msg_${++ids}`, () => `toolu_${++ids}`, raw.length);
    recorded.responseId = message.id;
    if (body.stream) stream(res, message, reply.midStreamError);
    else {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': message.id });
      res.end(JSON.stringify(message));
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    of: (agent) => requests.filter((r) => r.agent === agent),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

function messageOf(reply: Reply, body: RecordedRequest['body'], id: string, toolId: () => string, requestBytes: number) {
  const content: Block[] = [];
  if (reply.text !== undefined && reply.text !== '') content.push({ type: 'text', text: reply.text });
  for (const tool of reply.tools ?? []) content.push({ type: 'tool_use', id: tool.id ?? toolId(), name: tool.name, input: tool.input });
  const stopReason = reply.stopReason ?? (reply.tools?.length ? 'tool_use' : 'end_turn');
  const usage = reply.usage ?? {
    input_tokens: Math.ceil(requestBytes / 4),
    output_tokens: Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  return { id, type: 'message', role: 'assistant', model: body.model, content, stop_reason: stopReason, stop_sequence: null, usage };
}

function stream(res: ServerResponse, message: ReturnType<typeof messageOf>, midStreamError?: Reply['midStreamError']): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': message.id });
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  send('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (let i = 0; i < block.text.length; i += 4000) {
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text.slice(i, i + 4000) } });
      }
    } else {
      send('content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } });
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    send('content_block_stop', { type: 'content_block_stop', index });
  });
  if (midStreamError) {
    send('error', { type: 'error', error: { type: midStreamError.type, message: midStreamError.message ?? midStreamError.type } });
    return void res.end();
  }
  send('message_delta', { type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: message.usage.output_tokens } });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

function sendError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
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
  return last.content.map((b) => (b.type === 'text' ? (b.text ?? '') : b.type === 'tool_result' ? String(typeof b.content === 'string' ? b.content : JSON.stringify(b.content)) : '')).join('\n');
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
