import { createHash } from 'node:crypto';
import type { ModelRequest } from './client.js';
import { deepFreeze } from './deep-freeze.js';
import type { ProviderName } from './clouds.js';

/** A part's hash and the length of its JSON in bytes, computed once per object. */
const parts = new WeakMap<object, { hash: string; bytes: number }>();

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function partOf(part: object): { hash: string; bytes: number } {
  let known = parts.get(part);
  if (known === undefined) {
    const json = JSON.stringify(deepFreeze(part));
    known = { hash: sha256(json), bytes: Buffer.byteLength(json) };
    parts.set(part, known);
  }
  return known;
}

/** The hash of a part of a request, computed once per object (a conversation's messages are reused call after call). */
function hashOf(part: unknown): string {
  if (part === null || typeof part !== 'object') return sha256(JSON.stringify(part) ?? 'undefined');
  return partOf(part).hash;
}

const chains = new WeakMap<object, Map<string, string>>();

/** The hash of the messages up to and including `messages[last]`: each link is computed once for a given prefix. */
function chainOf(messages: readonly object[]): string {
  let chain = '';
  for (const message of messages) {
    let links = chains.get(message);
    if (!links) {
      deepFreeze(message);
      links = new Map();
      chains.set(message, links);
    }
    let next = links.get(chain);
    if (next === undefined) {
      next = sha256(chain + hashOf(message));
      links.set(chain, next);
    }
    chain = next;
  }
  return chain;
}

/**
 * The sha256 of a request in canonical form: its model, max_tokens, system prompt and tools hashed
 * on their own, and its messages as a chain of hashes; and the provider it goes to, but for
 * Anthropic's own API (whose hashes are those of the first versions). Equal requests have equal
 * hashes; the cost of a call's hash grows with what it adds, not with the whole conversation.
 */
export function requestHash(request: ModelRequest, provider: ProviderName = 'anthropic'): string {
  return sha256(
    JSON.stringify({
      ...(provider !== 'anthropic' ? { provider } : {}),
      model: request.model,
      max_tokens: request.max_tokens,
      system: hashOf(request.system ?? null),
      tools: hashOf(request.tools ?? null),
      messages: chainOf(request.messages as object[]),
      rest: Object.keys(request)
        .filter((k) => !['model', 'max_tokens', 'system', 'tools', 'messages'].includes(k))
        .map((k) => [k, (request as Record<string, unknown>)[k]]),
    }),
  );
}

/**
 * The bytes of `JSON.stringify(request)`, from the lengths the hash measured of its parts: a wide
 * fan-out's requests are not serialised once more to be measured (the SDK serialises them to send).
 */
export function requestBytes(request: ModelRequest): number {
  const { system, tools, messages, ...rest } = request;
  let bytes = Buffer.byteLength(JSON.stringify(rest));
  for (const [key, part] of [
    ['system', system],
    ['tools', tools],
  ] as const) {
    if (part === undefined) continue;
    bytes += key.length + 4 + (typeof part === 'object' && part !== null ? partOf(part).bytes : Buffer.byteLength(JSON.stringify(part)));
  }
  if (messages !== undefined) bytes += '"messages":[]'.length + 1 + messages.reduce((sum, m, i) => sum + partOf(m).bytes + (i > 0 ? 1 : 0), 0);
  return bytes;
}
