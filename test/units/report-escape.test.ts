import { describe, expect, it } from 'vitest';
import { attr, html, idOf, safeUrl } from '../../src/report/escape.js';
import { reportModel } from '../../src/report/report-model.js';
import type { SessionRecord } from '../../src/session/reader.js';
import type { SessionEvent } from '../../src/session/format.js';

/** The report's escaping and its spawn tree (src/report/), from source: a session is hostile input. */
describe("the report's escaping", () => {
  it('turns markup into text, and characters HTML cannot hold into U+FFFD, keeping pairs that are whole', () => {
    expect(html(`<script>a&b</script> "x" 'y'`)).toBe('&lt;script&gt;a&amp;b&lt;/script&gt; &quot;x&quot; &#39;y&#39;');
    expect(attr('" onload="x')).toBe('&quot; onload=&quot;x');
    expect(html('a\u0000b\u0008c\u000bd\u001fe\u007ff\tg\nh\ri')).toBe('a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf\tg\nh\ri');
    expect(html('\ud800 lone, 😀 whole')).toBe('\ufffd lone, 😀 whole');
  });

  it('links only to https URLs without credentials', () => {
    expect(safeUrl('https://github.com/o/r/pull/1#issuecomment-2')).toBe('https://github.com/o/r/pull/1#issuecomment-2');
    expect(safeUrl('https://x.example/?a="b"&c')).toBe('https://x.example/?a=%22b%22&amp;c');
    for (const bad of [
      'javascript:alert(1)',
      'http://x.example/',
      'data:text/html,x',
      'https://user:pw@x.example/',
      '//x.example',
      'not a url',
      null,
      undefined,
    ])
      expect(safeUrl(bad), String(bad)).toBeUndefined();
  });

  it('makes ids of letters, digits, - and _ only, one name one id', () => {
    expect(idOf('reviewer-1')).toBe('agent-reviewer-1');
    expect(idOf('a"b c')).toBe('agent-a_22_b_20_c');
    expect(idOf('a_22_b')).toBe('agent-a_5f_22_5f_b');
    expect(idOf('a\u022bc')).toBe('agent-a_22b_c');
    expect(idOf('x😀')).toBe('agent-x_1f600_');
  });
});

describe("the report's spawn tree", () => {
  const usage = { input_tokens: 10, output_tokens: 1 };
  const response = (id: string) => ({
    id,
    type: 'message',
    role: 'assistant',
    model: 'm',
    content: [{ type: 'text', text: 'x' }],
    stop_reason: 'end_turn',
    usage,
  });
  let seq = 0;
  const call = (agent: string, cost: number): SessionEvent =>
    ({
      seq: ++seq,
      type: 'model_call',
      agent,
      turn: 1,
      step: 1,
      request: { model: 'm' },
      request_sha256: '',
      response: response(`m${seq}`),
      cost_usd: cost,
    }) as SessionEvent;
  const spawned = (agent: string, parent: string): SessionEvent =>
    ({ seq: ++seq, type: 'agent_spawned', agent, template: 't', role: 'worker', parent, depth: 1 }) as SessionEvent;
  const record = (events: SessionEvent[]): SessionRecord =>
    ({ path: 's', header: { workflow: { path: 'w.yml' } }, events, effective: events, lastSeq: seq, torn: false, bytes: 0 }) as unknown as SessionRecord;

  it("puts each spawned agent under its parent, each subtree's cost its own and below, the roots adding up to the run", () => {
    const model = reportModel(record([call('lead', 1), spawned('a', 'lead'), spawned('b', 'a'), call('a', 0.5), call('b', 0.25), call('c', 2)]));
    const [lead, c] = model.tree;
    expect(model.tree.map((n) => n.agent)).toEqual(['lead', 'c']);
    expect(lead).toMatchObject({
      costUsd: 1,
      subtreeUsd: 1.75,
      children: [{ agent: 'a', costUsd: 0.5, subtreeUsd: 0.75, children: [{ agent: 'b', subtreeUsd: 0.25 }] }],
    });
    expect(c!.subtreeUsd).toBe(2);
    expect(model.tree.reduce((sum, n) => sum + n.subtreeUsd, 0)).toBe(model.summary.total.cost_usd);
    expect(model.calls.a![0]).toMatchObject({ turn: 1, step: 1, costUsd: 0.5, text: 'x', usage: { input: 10, output: 1 } });
  });

  it('a circle of parents (a hostile session) stays at the root, and is counted once', () => {
    const model = reportModel(record([spawned('x', 'y'), spawned('y', 'x'), call('x', 1), call('y', 2), spawned('z', 'z'), call('z', 4)]));
    expect(model.tree.map((n) => n.agent).sort()).toEqual(['x', 'y', 'z']);
    expect(model.tree.reduce((sum, n) => sum + n.subtreeUsd, 0)).toBe(7);
  });
});
