import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { httpFetch } from '../../src/provider/http-fetch.js';
import { SendSlices } from '../../src/provider/send-slices.js';

let server: Server | undefined;
const sockets = new Set<Socket>();

async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => handler(req, body, res));
  });
  server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

describe('the HTTP fetch', () => {
  it('sends the method, headers and body with its length, and answers a Response with status, headers and the body', async () => {
    const url = await serve((req, body, res) => {
      res.writeHead(201, {
        'content-type': 'application/json',
        'x-echo': req.headers['x-key'] ?? '',
        'x-length': req.headers['content-length'] ?? '',
        'x-chunked': String(req.headers['transfer-encoding'] ?? ''),
      });
      res.end(JSON.stringify({ method: req.method, path: req.url, body }));
    });
    const response = await httpFetch({})(`${url}/v1/messages?beta=true`, { method: 'post', headers: new Headers({ 'X-Key': 'k' }), body: '{"é":1}' });
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get('x-echo')).toBe('k');
    expect(response.headers.get('x-length')).toBe(String(Buffer.byteLength('{"é":1}')));
    expect(response.headers.get('x-chunked')).toBe('');
    expect(await response.json()).toEqual({ method: 'POST', path: '/v1/messages?beta=true', body: '{"é":1}' });
  });

  it('streams the body as it arrives, and keeps the connection for the next request', async () => {
    let release!: () => void;
    const more = new Promise<void>((r) => (release = r));
    const ports: number[] = [];
    const url = await serve((req, _body, res) => {
      ports.push(req.socket.remotePort!);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: one\n\n');
      void more.then(() => res.end('event: two\n\n'));
    });
    const send = httpFetch({});
    const response = await send(url, { method: 'POST', body: '{}' });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('event: one\n\n');
    release();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toBe('event: two\n\n');
    await (await send(url, { method: 'POST', body: '{}' })).text();
    expect(ports).toHaveLength(2);
    expect(ports[1]).toBe(ports[0]);
  });

  it('speaks https, on keep-alive connections too', async () => {
    const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
    const ports: number[] = [];
    server = createTlsServer({ key: fixture('localhost.key'), cert: fixture('localhost.crt') }, (req, res) => {
      ports.push(req.socket.remotePort!);
      req.resume();
      req.on('end', () => res.end(`secure ${req.method}`));
    });
    server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    // The fixture's certificate is its own authority: trusted for this test only.
    const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const send = httpFetch({});
      expect(await (await send(url, { method: 'POST', body: '{}' })).text()).toBe('secure POST');
      expect(await (await send(url, { method: 'POST', body: '{}' })).text()).toBe('secure POST');
      expect(ports[1]).toBe(ports[0]);
    } finally {
      if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
    }
  });

  it('decodes a gzip body as fetch does', async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(400, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync(JSON.stringify({ error: { type: 'invalid_request_error' } })));
    });
    const response = await httpFetch({})(url, { method: 'POST', body: '{}' });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: { type: 'invalid_request_error' } });
  });

  it('rejects with an AbortError when aborted before the answer, and errors the body when aborted during it', async () => {
    const url = await serve((req, _body, res) => {
      if (req.url === '/slow') return; // never answers
      res.writeHead(200);
      res.write('part');
    });
    const send = httpFetch({});
    const before = new AbortController();
    const pending = send(`${url}/slow`, { method: 'POST', body: '{}', signal: before.signal });
    setTimeout(() => before.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    const during = new AbortController();
    const response = await send(url, { method: 'POST', body: '{}', signal: during.signal });
    const reader = response.body!.getReader();
    await reader.read();
    during.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
    await expect(send(url, { method: 'POST', body: '{}', signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('fails as fetch fails when nothing listens, and errors the body of a connection lost mid-answer', async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('short');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const response = await httpFetch({})(url, { method: 'POST', body: '{}' });
    await expect(response.text()).rejects.toThrow();
    await expect(httpFetch({})('http://127.0.0.1:9/', { method: 'POST', body: '{}' })).rejects.toMatchObject({ name: 'TypeError', message: 'fetch failed' });
  });

  it('leaves to the global fetch what it does not speak: a stream body, and a process told to use a proxy', async () => {
    const url = await serve((req, body, res) => res.end(`${req.method} ${body}`));
    const stream = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode('streamed')), c.close()) });
    expect(await (await httpFetch({})(url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit)).text()).toBe('POST streamed');
    expect(await (await httpFetch({ NODE_USE_ENV_PROXY: '1' })(url, { method: 'POST', body: 'x' })).text()).toBe('POST x');
  });
});

describe('send slices', () => {
  it('lets a few calls go at once, and a burst in slices with a turn of the event loop between them', async () => {
    const slices = new SendSlices(3);
    const order: string[] = [];
    const started = Array.from({ length: 7 }, (_, i) => i).map(async (i) => {
      await slices.enter();
      order.push(`call ${i}`);
    });
    // An immediate queued now runs after the second slice (released by the first turn of the loop) and before the third.
    setImmediate(() => order.push('loop'));
    await Promise.all(started);
    expect(order).toEqual(['call 0', 'call 1', 'call 2', 'call 3', 'call 4', 'call 5', 'loop', 'call 6']);
    expect(slices.enter()).toBeUndefined();
  });
});
