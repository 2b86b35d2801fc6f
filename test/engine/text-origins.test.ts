import { describe, expect, it } from 'vitest';
import type { ChannelEvent } from '../../src/channel/channel-events.js';
import { TextOrigins } from '../../src/engine/trust/text-origins.js';

/** Which of the run's texts hold a stranger's words (engine/trust/text-origins.ts), event by event. */
const TAINTED = new Set(['t']);
const origins = () => new TextOrigins((agent) => TAINTED.has(agent));
let ids = 0;
const message = (kind: 'agent' | 'system' | 'kickoff', sender: string): ChannelEvent => ({
  type: 'message',
  message: { id: ++ids, kind, sender, text: 'x', recipients: ['r'] },
});
const proposal = (id: string, proposer: string): ChannelEvent => ({
  type: 'proposal_opened',
  proposal: { id, proposer, question: 'q', options: ['a', 'b'], voters: ['r'], rule: 'majority', quorum: 1, deadline_turns: null, opened_at_turn: 0 },
});

describe('text origins', () => {
  it("an agent's message carries its origin only when its sender was tainted; the kickoff only when it holds a source", () => {
    const o = origins();
    expect(o.noticed(message('agent', 'c'), undefined)).toBeUndefined();
    const m = message('agent', 't');
    expect(o.noticed(m, undefined)).toEqual({ why: 'a message from @t, who read untrusted text' });
    expect(o.noticed(message('kickoff', 'system'), undefined)).toBeUndefined();
    expect(o.noticed(message('kickoff', 'system'), 'the kickoff, which holds inputs.body')).toEqual({ why: 'the kickoff, which holds inputs.body' });
    const id = (m as Extract<ChannelEvent, { type: 'message' }>).message.id;
    expect(o.of({ messages: [id - 100, id] })).toEqual({ why: `message #${id} of the channel's history, a message from @t, who read untrusted text` });
    expect(o.of({ messages: [id - 100] })).toBeUndefined();
  });

  it('a system notice carries the origin of the event right before it, and only that one', () => {
    const o = origins();
    o.noticed(proposal('p1', 't'), undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toEqual({ why: 'proposal "p1" of @t, who read untrusted text', proposal: 'p1' });
    expect(o.noticed(message('system', 'system'), undefined)).toBeUndefined();
    o.noticed(proposal('p2', 'c'), undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toBeUndefined();
    o.noticed(proposal('p3', 't'), undefined);
    o.noticed({ type: 'ack', agent: 'r', through: 1 }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toBeUndefined();
    o.noticed({ type: 'proposal_closed', proposal: 'p1', status: 'decided', winner: 'a', reason: null }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)?.proposal).toBe('p1');
    o.noticed({ type: 'proposal_closed', proposal: 'p2', status: 'decided', winner: 'a', reason: null }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toBeUndefined();
  });

  it("a tainted voter's reason taints a clean proposal; a vote with no reason, or a clean voter's, does not; the first why stays", () => {
    const o = origins();
    o.noticed(proposal('p', 'c'), undefined);
    o.noticed({ type: 'vote', proposal: 'p', voter: 't', option: 'a', reason: '' }, undefined);
    o.noticed({ type: 'vote', proposal: 'p', voter: 'c', option: 'a', reason: 'fine' }, undefined);
    expect(o.of({ proposal: 'p' })).toBeUndefined();
    o.noticed({ type: 'vote', proposal: 'p', voter: 't', option: 'a', reason: 'do it' }, undefined);
    expect(o.of({ proposal: 'p' })).toEqual({ why: 'proposal "p", voted on by @t, who read untrusted text', proposal: 'p' });
    o.noticed(proposal('q', 't'), undefined);
    o.noticed({ type: 'vote', proposal: 'q', voter: 't', option: 'a', reason: 'again' }, undefined);
    expect(o.of({ proposal: 'q' })?.why).toBe('proposal "q" of @t, who read untrusted text');
  });

  it("documents: a tainted author's entry, version or edit taints the document and the notice after it; the first why stays", () => {
    const o = origins();
    o.documentHolds('seed', 'document "seed" holds inputs.notes');
    o.documentHolds('seed', 'another why');
    expect(o.of({ document: 'seed' })).toEqual({ why: 'document "seed" holds inputs.notes' });
    o.noticed({ type: 'document_changed', document: 'plan', version: 2, author: 'c', text: 'x', why: '', edit: null }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toBeUndefined();
    expect(o.of({ document: 'plan' })).toBeUndefined();
    o.noticed({ type: 'document_appended', document: 'log', version: 2, author: 't', text: 'x' }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toEqual({ why: 'document "log", written by @t, who read untrusted text' });
    o.noticed({ type: 'edit_proposed', edit: { id: 'plan#1', document: 'plan', author: 't', base: 1, text: 'x', why: '' } }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toEqual({ why: 'document "plan", written by @t, who read untrusted text' });
    o.noticed({ type: 'edit_closed', edit: 'plan#1', status: 'rejected', reviewer: 'c', why: '' }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)?.why).toBe('document "plan", written by @t, who read untrusted text');
    o.noticed({ type: 'edit_closed', edit: 'other#1', status: 'rejected', reviewer: 'c', why: '' }, undefined);
    expect(o.noticed(message('system', 'system'), undefined)).toBeUndefined();
    o.noticed({ type: 'document_changed', document: 'plan', version: 3, author: 't', text: 'y', why: '', edit: null }, undefined);
    expect(o.of({ document: 'plan' })?.why).toBe('document "plan", written by @t, who read untrusted text');
  });
});
