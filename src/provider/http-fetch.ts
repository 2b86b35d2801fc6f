import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';

export type Fetch = (url: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * The SDKs' requests over node:http, on keep-alive connections (docs/ARCHITECTURE.md: HTTP).
 * Node's global fetch runs every request through the Fetch standard's machinery (a Request, its
 * signal and header lists, a wasm HTTP parser, web streams from the socket up): a wide fan-out
 * paid more for that than for the rest of its requests. Here a request is one http.request and
 * its answer one Response, whose body streams from the socket as it arrives. What this does not
 * speak goes to the global fetch as before: a body that is a stream or a form, a Request object,
 * and a process told to use a proxy (`NODE_USE_ENV_PROXY`, which only the global fetch honours).
 */
export function httpFetch(env: NodeJS.ProcessEnv = process.env): Fetch {
  if (env.NODE_USE_ENV_PROXY) return (url, init) => fetch(url, init);
  const http: Transport = { agent: new HttpAgent({ keepAlive: true, scheduling: 'lifo' }), request: httpRequest };
  // node:https (and TLS) load with the first https request, not at every start.
  let https: Promise<Transport> | undefined;
  const httpsTransport = () =>
    (https ??= import('node:https').then(({ Agent, request }) => ({ agent: new Agent({ keepAlive: true, scheduling: 'lifo' }), request })));
  // Every call of a run goes to the same few URLs: each is parsed once.
  const parsed = new Map<string, URL>();
  const urlOf = (url: string): URL => {
    let known = parsed.get(url);
    if (!known) {
      if (parsed.size >= 64) parsed.clear();
      parsed.set(url, (known = new URL(url)));
    }
    return known;
  };
  return async (url, init = {}) => {
    const body = init.body;
    const target = typeof url === 'string' ? urlOf(url) : url instanceof URL ? url : undefined;
    if (!target || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) || (target.protocol !== 'http:' && target.protocol !== 'https:'))
      return fetch(url, init);
    return send(target, init, body ?? undefined, target.protocol === 'http:' ? http : await httpsTransport());
  };
}

interface Transport {
  agent: HttpAgent;
  request: typeof httpRequest;
}

function send(url: URL, init: RequestInit, body: string | Uint8Array | undefined, { agent, request: open }: Transport): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const headers: Record<string, string> = {};
  const given = init.headers;
  if (given instanceof Headers) given.forEach((value, name) => (headers[name] = value));
  else for (const [name, value] of new Headers(given)) headers[name] = value;
  if (body !== undefined) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  const method = (init.method ?? 'GET').toUpperCase();
  return new Promise((resolve, reject) => {
    const request = open(url, { method, headers, agent });
    let answer: IncomingMessage | undefined;
    const onAbort = () => {
      const error = abortError(signal!);
      request.destroy(error);
      answer?.destroy(error);
      reject(error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    request.on('error', (cause) => {
      done();
      reject(new TypeError('fetch failed', { cause }));
    });
    request.on('response', (response) => {
      answer = response;
      response.on('close', done);
      responseOf(response, method).then(resolve, reject);
    });
    request.end(body);
  });
}

/** The Response of an answer: its status and headers now, its body as it streams (decoded as fetch decodes it). */
async function responseOf(answer: IncomingMessage, method: string): Promise<Response> {
  const headers = new Headers();
  const raw = answer.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const status = answer.statusCode ?? 0;
  const init = { status, statusText: answer.statusMessage ?? '', headers };
  if (method === 'HEAD' || status === 204 || status === 205 || status === 304) {
    answer.resume();
    return new Response(null, init);
  }
  return new Response(Readable.toWeb(await decoded(answer)) as ReadableStream<Uint8Array>, init);
}

/** The body as sent, or decoded when the server compressed it (node:zlib loads only then). */
async function decoded(answer: IncomingMessage): Promise<Readable> {
  const encoding = answer.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== 'gzip' && encoding !== 'x-gzip' && encoding !== 'deflate' && encoding !== 'br') return answer;
  const zlib = await import('node:zlib');
  const decoder = encoding === 'br' ? zlib.createBrotliDecompress() : encoding === 'deflate' ? zlib.createInflate() : zlib.createGunzip();
  answer.on('error', (e) => decoder.destroy(e));
  return answer.pipe(decoder);
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('This operation was aborted', 'AbortError');
}
