import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the collector received it, whichever encoding it came in. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  events: string[];
  status: { code: number; message: string };
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** The content types of the requests, in order. */
  requests: { contentType: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

/**
 * An OTLP/HTTP traces receiver on 127.0.0.1, as a collector is: `POST /v1/traces` in JSON
 * (`application/json`) or protobuf (`application/x-protobuf`), decoded here by hand so that the
 * test does not trust the exporter's own code to read what it wrote.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      requests.push({ contentType, headers: req.headers });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      spans.push(...(contentType.includes('json') ? fromJson(JSON.parse(body.toString('utf8'))) : fromProtobuf(body)));
      res.writeHead(200, { 'content-type': contentType.includes('json') ? 'application/json' : 'application/x-protobuf' });
      res.end(contentType.includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: OTLP/JSON, read field by field as the test needs it
type Json = Record<string, any>;

function jsonValue(v: Json): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(jsonValue);
  return undefined;
}

const jsonAttributes = (list: Json[] = []) => Object.fromEntries(list.map((kv) => [kv.key, jsonValue(kv.value)]));

export function fromJson(request: Json): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs: Json) =>
    (rs.scopeSpans ?? []).flatMap((ss: Json) =>
      (ss.spans ?? []).map((s: Json) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        startNs: BigInt(s.startTimeUnixNano),
        endNs: BigInt(s.endTimeUnixNano),
        attributes: jsonAttributes(s.attributes),
        events: (s.events ?? []).map((e: Json) => e.name),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        resource: jsonAttributes(rs.resource?.attributes),
      })),
    ),
  );
}

/** A protobuf message's fields: by number, each a varint, a fixed64, or bytes. */
function fields(buf: Buffer): Map<number, (bigint | Buffer)[]> {
  const out = new Map<number, (bigint | Buffer)[]>();
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[i++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const [field, wire] = [key >> 3, key & 7];
    let value: bigint | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 1) {
      value = buf.readBigUInt64LE(i);
      i += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      value = buf.subarray(i, i + length);
      i += length;
    } else if (wire === 5) {
      value = BigInt(buf.readUInt32LE(i));
      i += 4;
    } else throw new Error(`protobuf wire type ${wire} at byte ${i}`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

const bytesOf = (f: Map<number, (bigint | Buffer)[]>, n: number) => f.get(n) as Buffer[] | undefined;
const text = (f: Map<number, (bigint | Buffer)[]>, n: number) => bytesOf(f, n)?.[0]?.toString('utf8') ?? '';

function anyValue(buf: Buffer): unknown {
  const f = fields(buf);
  if (f.has(1)) return text(f, 1);
  if (f.has(2)) return f.get(2)![0] === 1n;
  if (f.has(3)) return Number(BigInt.asIntN(64, f.get(3)![0] as bigint));
  if (f.has(4)) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(f.get(4)![0] as bigint);
    return b.readDoubleLE(0);
  }
  if (f.has(5)) return (bytesOf(fields(bytesOf(f, 5)![0]!), 1) ?? []).map(anyValue);
  return undefined;
}

const protobufAttributes = (list: Buffer[] = []) =>
  Object.fromEntries(
    list.map((kv) => {
      const f = fields(kv);
      return [text(f, 1), bytesOf(f, 2) ? anyValue(bytesOf(f, 2)![0]!) : undefined];
    }),
  );

export function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return (bytesOf(fields(body), 1) ?? []).flatMap((rsBytes) => {
    const rs = fields(rsBytes);
    const resource = bytesOf(rs, 1) ? protobufAttributes(bytesOf(fields(bytesOf(rs, 1)![0]!), 1)) : {};
    return (bytesOf(rs, 2) ?? []).flatMap((ssBytes) =>
      (bytesOf(fields(ssBytes), 2) ?? []).map((spanBytes) => {
        const s = fields(spanBytes);
        const status = bytesOf(s, 15) ? fields(bytesOf(s, 15)![0]!) : new Map();
        return {
          traceId: bytesOf(s, 1)![0]!.toString('hex'),
          spanId: bytesOf(s, 2)![0]!.toString('hex'),
          parentSpanId: bytesOf(s, 4)?.[0]?.toString('hex') ?? '',
          name: text(s, 5),
          kind: Number(s.get(6)?.[0] ?? 0n),
          startNs: s.get(7)![0] as bigint,
          endNs: s.get(8)![0] as bigint,
          attributes: protobufAttributes(bytesOf(s, 9)),
          events: (bytesOf(s, 11) ?? []).map((e) => text(fields(e), 2)),
          status: {
            code: Number((status.get(3)?.[0] as bigint | undefined) ?? 0n),
            message: status.has(2) ? (status.get(2)![0] as Buffer).toString('utf8') : '',
          },
          resource,
        };
      }),
    );
  });
}
