import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../src/provider/client.js';
import { deepFreeze } from '../../src/provider/deep-freeze.js';
import { requestBytes, requestHash } from '../../src/provider/request-hash.js';
import { RequestDeltas, SHARED_TEXT_CHARS } from '../../src/engine/calls/request-delta.js';

const message = (text: string, role: 'user' | 'assistant' = 'user') => ({ role, content: [{ type: 'text' as const, text }] });
const request = (messages: ModelRequest['messages'], over: Partial<ModelRequest> = {}) =>
  ({
    model: 'claude-sonnet-5-5',
    max_tokens: 1000,
    system: [{ type: 'text', text: 's' }],
    tools: [{ name: 't', input_schema: { type: 'object' } }],
    messages,
    ...over,
  }) as ModelRequest;

describe('the request hash', () => {
  it('is a sha256, equal for equal requests made of different objects', () => {
    const a = requestHash(request([message('one'), message('two', 'assistant')]));
    const b = requestHash(request([message('one'), message('two', 'assistant')]));
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).toBe(a);
  });

  it('tells the order of messages, where one ends and the next begins, and each part apart', () => {
    const base = requestHash(request([message('a'), message('b')]));
    expect(requestHash(request([message('b'), message('a')]))).not.toBe(base);
    expect(requestHash(request([message('a')]))).not.toBe(base);
    expect(requestHash(request([message('a'), message('b'), message('c')]))).not.toBe(base);
    expect(requestHash(request([message('a'), message('b')], { system: undefined }))).not.toBe(base);
    expect(requestHash(request([message('a'), message('b')], { tools: undefined }))).not.toBe(base);
    expect(requestHash(request([message('a'), message('b')], { tools: [] }))).not.toBe(base);
    expect(requestHash(request([message('a'), message('b')], { thinking: { type: 'enabled', budget_tokens: 2000 } }))).not.toBe(base);
    // A system prompt and tools are hashed each on its own: moving text between them changes the hash.
    expect(requestHash(request([], { system: [{ type: 'text', text: 'x' }], tools: [] }))).not.toBe(
      requestHash(request([], { system: [], tools: [{ name: 'x', input_schema: { type: 'object' } }] })),
    );
  });

  it('reuses a message object across calls: the hash of a longer conversation is that of the same request built anew', () => {
    const kept = [message('one'), message('two', 'assistant')];
    requestHash(request(kept));
    const longer = [...kept, message('three')];
    expect(requestHash(request(longer))).toBe(requestHash(request([message('one'), message('two', 'assistant'), message('three')])));
    // A different prefix before the same message object gives a different chain.
    expect(requestHash(request([message('zero'), kept[1]!]))).not.toBe(requestHash(request(kept)));
  });

  it('freezes what it hashed: a change in place throws instead of serving a stale hash', () => {
    const m = message('one');
    const r = request([m]);
    requestHash(r);
    expect(() => {
      (m.content[0] as { text: string }).text = 'changed';
    }).toThrow(TypeError);
    expect(() => (r.system as unknown[]).push({ type: 'text', text: 'more' })).toThrow(TypeError);
  });
});

describe('deepFreeze', () => {
  it('leaves what is inside an object frozen already: it was walked when that object was frozen', () => {
    const inner = { x: 1 };
    deepFreeze(Object.freeze({ inner }));
    expect(Object.isFrozen(inner)).toBe(false);
  });

  it('freezes every level, and returns the value', () => {
    const value = { a: [{ b: { c: 1 } }], d: 'x' };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value.a[0]!.b)).toBe(true);
    expect(deepFreeze(null)).toBe(null);
    expect(deepFreeze(3)).toBe(3);
  });
});

describe('the request delta the session keeps', () => {
  it('holds the system and tools when they change, and the messages since the previous call', () => {
    const deltas = new RequestDeltas();
    const first = [message('one')];
    const r1 = request(first);
    expect(deltas.of('lead', r1)).toEqual({ model: 'claude-sonnet-5-5', max_tokens: 1000, system: 's', tools: ['t'], messages_from: 0, messages: first });
    const r2 = request([first[0]!, message('two', 'assistant'), message('three')], { system: r1.system, tools: r1.tools });
    const second = deltas.of('lead', r2);
    expect(second).toMatchObject({ messages_from: 0, messages: r2.messages.slice(0) });
    expect(second).not.toHaveProperty('system');
    expect(second).not.toHaveProperty('tools');
    const r3 = request([...r2.messages, message('four', 'assistant')], { system: r1.system, tools: r1.tools });
    expect(deltas.of('lead', r3)).toMatchObject({ messages_from: 2, messages: r3.messages.slice(2) });
    // Another agent's first call has everything.
    expect(deltas.of('helper', r3)).toMatchObject({ messages_from: 0, system: 's' });
    // A compacted conversation (new message objects) is kept whole.
    expect(deltas.of('lead', request([message('one'), message('summary')], { system: r1.system, tools: r1.tools }))).toMatchObject({ messages_from: 0 });
  });
});

describe('the system prompt as the session keeps it', () => {
  it('with a context, long blocks are kept once and referred to by hash; one block (no context) is written whole', () => {
    const kept: [string, string][] = [];
    const deltas = new RequestDeltas((sha256, text) => kept.push([sha256, text]));
    const context = { type: 'text' as const, text: 'c'.repeat(SHARED_TEXT_CHARS) };
    const long = 'i'.repeat(SHARED_TEXT_CHARS + 1);
    const system = (own: string, instructions = 'short') => [context, { type: 'text' as const, text: instructions }, { type: 'text' as const, text: own }];
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    expect(deltas.of('a', request([message('x')], { system: system('You are @a') })).system).toBe(`[shared_text ${sha(context.text)}]\nshort\nYou are @a`);
    expect(deltas.of('b', request([message('x')], { system: system('You are @b', long) })).system).toBe(
      `[shared_text ${sha(context.text)}]\n[shared_text ${sha(long)}]\nYou are @b`,
    );
    // The context block is one object for every agent: kept and hashed once.
    expect(kept).toEqual([
      [sha(context.text), context.text],
      [sha(long), long],
    ]);
    // A block one character shorter is written as it is; a prompt of one block always is.
    const shorter = { type: 'text' as const, text: 's'.repeat(SHARED_TEXT_CHARS - 1) };
    expect(deltas.of('c', request([message('x')], { system: [shorter, { type: 'text', text: 'You are @c' }] })).system).toBe(`${shorter.text}\nYou are @c`);
    expect(deltas.of('d', request([message('x')], { system: [{ type: 'text', text: long }] })).system).toBe(long);
    expect(kept).toHaveLength(2);
  });
});

describe('the canonical form', () => {
  it('is stable across versions: a shared cache written by an older conclave still answers', () => {
    // Changing how a request is hashed voids every shared response cache: when it must change,
    // say so in the release notes and change this value.
    const r = request([message('one'), message('two', 'assistant')], { thinking: { type: 'enabled', budget_tokens: 2000 } });
    expect(requestHash(r)).toBe(GOLDEN);
    expect(requestHash(request([], { system: undefined, tools: undefined }))).toBe(GOLDEN_EMPTY);
  });
});

const GOLDEN = '527ca56eb1463da3b1f7f90e903ba3c264fbe82e6f328a69c6c9ccbf15726bbf';
const GOLDEN_EMPTY = '294882f1c79ba8df88412a83ee33a83c4055da5383e2d07093e4eb770eaae2be';

describe('the bytes of a request', () => {
  it('are those of JSON.stringify, from the parts the hash measured: unicode, a string system prompt, extra fields, no messages', () => {
    const cases = [
      request([]),
      request([message('héllo "quoted" ✓'), message('y', 'assistant')], { thinking: { type: 'enabled', budget_tokens: 3000 } }),
      request([message('x')], { system: 'a plain system prompt', tools: undefined }),
      request([message('x'), message('z', 'assistant'), message('w')], { system: undefined, output_config: { effort: 'low' } } as Partial<ModelRequest>),
    ];
    for (const r of cases) {
      requestHash(r);
      expect(requestBytes(r)).toBe(Buffer.byteLength(JSON.stringify(r)));
    }
  });
});
