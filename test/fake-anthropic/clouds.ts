import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { crc32 } from 'node:zlib';

/**
 * The clouds' wire formats, as the fake API speaks them beside Anthropic's own: Bedrock's
 * `/model/ID/invoke-with-response-stream` (SigV4-signed, answered in AWS's binary event stream),
 * Vertex's `…/publishers/anthropic/models/ID:streamRawPredict` (a Bearer token from the metadata
 * server below), and Foundry's `/anthropic/v1/messages` (its key, or an Entra token).
 */
export type Wire = 'anthropic' | 'bedrock' | 'vertex' | 'foundry';

/** The AWS credentials the fake Bedrock accepts: its signature is checked with this secret. */
export const FAKE_AWS = {
  accessKeyId: 'AKIAFAKECONCLAVE0001',
  secretAccessKey: 'fake/Secret+Key/For/Conclave/Tests/0001',
  sessionToken: 'FakeSessionTokenForConclaveTests0001',
};
/** The Foundry key the fake accepts (as `x-api-key`). */
export const FAKE_FOUNDRY_KEY = 'fake-foundry-key-for-conclave-0001';
/** The Entra token the fake `az` prints, which the fake Foundry accepts as a Bearer token. */
export const FAKE_ENTRA_TOKEN = 'fake-entra-token-for-conclave-0001';

/** Anthropic's workload identity federation as the fake knows it: the job's identity token, and the rule it matches. */
export const FAKE_FEDERATION = { identityToken: 'eyJfake.identity-token-of-the-job.sig', ruleId: 'fdrl_fake_conclave', organizationId: 'org-fake-conclave' };

/**
 * Anthropic's token endpoint (`POST /v1/oauth/token`, the jwt-bearer grant): an identity token
 * that matches the federation rule gets an access token, which the fake API then accepts.
 */
export function federationAnswer(req: IncomingMessage, raw: string, res: ServerResponse, issued: Set<string>): boolean {
  if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/v1/oauth/token') return false;
  const body = JSON.parse(raw) as Record<string, unknown>;
  const matches =
    body.grant_type === 'urn:ietf:params:oauth:grant-type:jwt-bearer' &&
    body.assertion === FAKE_FEDERATION.identityToken &&
    body.federation_rule_id === FAKE_FEDERATION.ruleId &&
    body.organization_id === FAKE_FEDERATION.organizationId;
  if (!matches) {
    res.writeHead(401, { 'content-type': 'application/json' });
    return (void res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'the identity token does not match the federation rule' })), true);
  }
  const token = `sk-ant-oat-federated-${randomBytes(12).toString('hex')}`;
  issued.add(token);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600 }));
  return true;
}

export interface CloudRoute {
  wire: Wire;
  /** The model as the path names it (Bedrock and Vertex), decoded. */
  model?: string;
  /** Bedrock says in the path, not the body, that the answer is streamed. */
  stream?: boolean;
}

/** Which wire a request speaks, from its path. */
export function routeOf(method: string | undefined, url: string): CloudRoute | undefined {
  if (method !== 'POST') return undefined;
  const path = url.split('?')[0]!;
  if (path === '/v1/messages') return { wire: 'anthropic' };
  if (path === '/anthropic/v1/messages') return { wire: 'foundry' };
  const bedrock = /^\/model\/([^/]+)\/invoke(-with-response-stream)?$/.exec(path);
  if (bedrock) return { wire: 'bedrock', model: decodeURIComponent(bedrock[1]!), stream: bedrock[2] !== undefined };
  const vertex = /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/anthropic\/models\/([^/:]+):(stream)?[rR]awPredict$/.exec(path);
  if (vertex) return { wire: 'vertex', model: decodeURIComponent(vertex[1]!) };
  return undefined;
}

/** What is wrong with a request's credentials on its wire, or nothing. */
export function authProblem(wire: Wire, req: IncomingMessage, raw: string, issued: ReadonlySet<string>, anthropicKeyPrefix: string): string | undefined {
  const bearer = req.headers.authorization?.replace(/^Bearer /, '');
  switch (wire) {
    case 'anthropic': {
      if (bearer !== undefined && issued.has(bearer)) return undefined;
      const key = req.headers['x-api-key'] ?? bearer;
      return typeof key === 'string' && key.startsWith(anthropicKeyPrefix) ? undefined : 'invalid x-api-key';
    }
    case 'foundry':
      return req.headers['x-api-key'] === FAKE_FOUNDRY_KEY || bearer === FAKE_ENTRA_TOKEN ? undefined : 'invalid Foundry key or Entra token';
    case 'vertex':
      return bearer !== undefined && issued.has(bearer) && bearer.startsWith('ya29.')
        ? undefined
        : 'Request had invalid authentication credentials. Expected OAuth 2 access token';
    case 'bedrock':
      return sigV4Problem(req, raw);
  }
}

/** What Bedrock and Vertex require of a request: the model in the path, the API version in the body. */
export function bodyProblem(wire: Wire, req: IncomingMessage, body: Record<string, unknown>): string | undefined {
  if (wire !== 'bedrock' && wire !== 'vertex') return undefined;
  if (typeof body.anthropic_version !== 'string') return 'anthropic_version is required in the body';
  if (req.headers['anthropic-version'] !== undefined) return 'the API version goes in the body, not the anthropic-version header';
  if ('model' in body) return 'model is named in the path, not the body';
  return undefined;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const escapeUri = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Checks a request's AWS Signature Version 4 as Bedrock does, with the one secret the fake knows. */
function sigV4Problem(req: IncomingMessage, raw: string): string | undefined {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    req.headers.authorization ?? '',
  );
  if (!auth) return 'missing or malformed SigV4 Authorization header';
  const [, accessKeyId, date, region, service, signedHeaders, signature] = auth as unknown as string[];
  if (accessKeyId !== FAKE_AWS.accessKeyId) return `the security token included in the request is invalid (access key ${accessKeyId})`;
  if (service !== 'bedrock') return `credential should be scoped to correct service: 'bedrock', not '${service}'`;
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  if (!amzDate.startsWith(date!)) return 'x-amz-date does not match the credential scope';
  const names = signedHeaders!.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return 'host and x-amz-date must be signed';
  if (req.headers['x-amz-security-token'] !== FAKE_AWS.sessionToken || !names.includes('x-amz-security-token'))
    return 'the session token is missing, wrong or unsigned';
  const path = (req.url ?? '/').split('?')[0]!;
  const canonicalPath = escapeUri(path).replace(/%2F/g, '/');
  const headers = names
    .map(
      (name) =>
        `${name}:${String(req.headers[name] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}`,
    )
    .join('\n');
  const canonical = ['POST', canonicalPath, '', `${headers}\n`, signedHeaders, sha256(raw)].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${FAKE_AWS.secretAccessKey}`, date!), region!), service!), 'aws4_request');
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  return expected === signature ? undefined : 'The request signature we calculated does not match the signature you provided';
}

/** An error as each cloud sends it. */
export function sendCloudError(res: ServerResponse, wire: Wire, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  if (wire === 'bedrock') {
    const awsType =
      status === 403 ? 'AccessDeniedException' : status === 429 ? 'ThrottlingException' : status >= 500 ? 'InternalServerException' : 'ValidationException';
    res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': awsType, ...headers });
    return void res.end(JSON.stringify({ message }));
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

/** One frame of AWS's event stream: prelude, string headers, payload, each part with its CRC32. */
function eventFrame(headers: Record<string, string>, payload: Buffer): Buffer {
  const headerBytes = Buffer.concat(
    Object.entries(headers).map(([name, value]) => {
      const n = Buffer.from(name);
      const v = Buffer.from(value);
      const head = Buffer.alloc(1 + n.length + 1 + 2);
      head.writeUInt8(n.length, 0);
      n.copy(head, 1);
      head.writeUInt8(7, 1 + n.length); // 7: a string value
      head.writeUInt16BE(v.length, 2 + n.length);
      return Buffer.concat([head, v]);
    }),
  );
  const total = 12 + headerBytes.length + payload.length + 4;
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(headerBytes.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude), 0);
  const body = Buffer.concat([prelude, preludeCrc, headerBytes, payload]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body), 0);
  return Buffer.concat([body, crc]);
}

/** A Messages API stream event as Bedrock sends it: a `chunk` whose bytes are the event's JSON. */
export function bedrockChunk(data: unknown): Buffer {
  const payload = Buffer.from(JSON.stringify({ bytes: Buffer.from(JSON.stringify(data)).toString('base64') }));
  return eventFrame({ ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' }, payload);
}

/** An error mid-stream as Bedrock sends it: an exception frame. */
export function bedrockException(type: string, message: string): Buffer {
  return eventFrame({ ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' }, Buffer.from(JSON.stringify({ message })));
}

/**
 * Google's metadata server, as a GCE machine has it (`GCE_METADATA_HOST` points the Google auth
 * library here): it issues access tokens, which the fake Vertex then accepts.
 */
export function metadataAnswer(req: IncomingMessage, res: ServerResponse, tokens: Set<string>, project: string): boolean {
  const path = (req.url ?? '').split('?')[0]!;
  if (!path.startsWith('/computeMetadata/')) return false;
  const flavor = { 'metadata-flavor': 'Google' };
  if (req.headers['metadata-flavor'] !== 'Google') {
    res.writeHead(403, flavor);
    return (void res.end('Missing Metadata-Flavor:Google header'), true);
  }
  if (path === '/computeMetadata/v1/instance/service-accounts/default/token') {
    const token = `ya29.fake-${randomBytes(12).toString('hex')}`;
    tokens.add(token);
    res.writeHead(200, { ...flavor, 'content-type': 'application/json' });
    return (void res.end(JSON.stringify({ access_token: token, expires_in: 3599, token_type: 'Bearer' })), true);
  }
  if (path === '/computeMetadata/v1/project/project-id') {
    res.writeHead(200, { ...flavor, 'content-type': 'application/text' });
    return (void res.end(project), true);
  }
  if (path === '/computeMetadata/v1/instance/service-accounts/default/email') {
    res.writeHead(200, { ...flavor, 'content-type': 'application/text' });
    return (void res.end('conclave-tests@fake-project.iam.gserviceaccount.com'), true);
  }
  res.writeHead(200, { ...flavor, 'content-type': 'application/text' });
  res.end('');
  return true;
}
