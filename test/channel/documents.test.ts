import { beforeAll, describe, expect, it } from 'vitest';
import { Channel } from '../../src/channel/channel.js';
import type { ChannelEvent } from '../../src/channel/channel-events.js';
import { loadMergeTools } from '../../src/channel/documents.js';
import { MAX_DOCUMENT_CHARS, MAX_WHY_CHARS } from '../../src/channel/document.js';
import { team } from './team.js';

beforeAll(() => loadMergeTools());

const PLAN = 'one\ntwo\nthree\nfour\nfive\n';

function withDocuments() {
  const events: ChannelEvent[] = [];
  const channel = new Channel(team(), (e) => events.push(e));
  channel.openDocument({ name: 'plan', owner: 'lead', mode: 'edit', text: PLAN });
  channel.openDocument({ name: 'log', owner: 'lead', mode: 'append', text: '' });
  return { channel, events };
}

const inbox = (channel: Channel, agent: string) => channel.deliver(agent).messages.map((m) => m.text);

describe('documents with an owner', () => {
  it('applies the owner’s edit at once, and one against an older version merged with the changes since', () => {
    const { channel } = withDocuments();
    expect(channel.editDocument('lead', 'plan', 1, PLAN.replace('one', 'ONE'), 'caps')).toEqual({ document: 'plan', version: 2, applied: true });
    expect(channel.editDocument('lead', 'plan', 1, PLAN.replace('five', 'FIVE'), '')).toMatchObject({ version: 3 });
    expect(channel.readDocument('a', 'plan')).toMatchObject({ version: 3, text: 'ONE\ntwo\nthree\nfour\nFIVE\n', owner: 'lead' });
    expect(() => channel.editDocument('lead', 'plan', 1, PLAN.replace('one', 'uno'), '')).toThrow(
      /your edit overlaps changes made since version 1 \(the document is at version 3\): nothing changed[\s\S]*<<<<<<< version 3 \(now\)\nONE\n\|\|\|\|\|\|\| version 1 \(the edit's base\)\none\n=======\nuno\n>>>>>>> your edit/,
    );
  });

  it('numbers other agents’ edits per document, tells the owner, and lists them open', () => {
    const { channel } = withDocuments();
    expect(channel.editDocument('a', 'plan', 1, PLAN.replace('two', 'TWO'), 'louder')).toMatchObject({ edit: 'plan#1' });
    expect(channel.editDocument('b', 'plan', 1, PLAN.replace('four', 'FOUR'), '')).toMatchObject({ edit: 'plan#2' });
    const [first, second] = inbox(channel, 'lead');
    expect(first).toContain('Edit plan#1 of document "plan" from @a, against version 1: louder');
    expect(first).toContain('-two\n+TWO');
    expect(second).toContain('from @b, against version 1: (no reason given)');
    expect(channel.readDocument('lead', 'plan').open_edits).toEqual([
      { edit: 'plan#1', author: 'a', base: 1, why: 'louder' },
      { edit: 'plan#2', author: 'b', base: 1, why: '' },
    ]);
    expect(channel.readDocument('lead', 'plan').version).toBe(1);
  });

  it('lets only the owner review, once per edit; an edit that changes nothing merged adds no version', () => {
    const { channel } = withDocuments();
    channel.editDocument('a', 'plan', 1, PLAN.replace('two', 'TWO'), '');
    channel.editDocument('b', 'plan', 1, PLAN.replace('two', 'TWO'), 'same');
    expect(() => channel.reviewEdit('a', 'plan#1', true, '')).toThrow('only @lead, who owns "plan", reviews its edits');
    expect(channel.reviewEdit('lead', 'plan#1', true, 'ok')).toEqual({ edit: 'plan#1', status: 'accepted', version: 2 });
    expect(() => channel.reviewEdit('lead', 'plan#1', false, '')).toThrow('edit plan#1 is closed already (accepted)');
    expect(channel.reviewEdit('lead', 'plan#2', true, '')).toEqual({ edit: 'plan#2', status: 'accepted', version: 2 });
    expect(() => channel.reviewEdit('lead', 'plan#9', true, '')).toThrow('there is no edit "plan#9"; no edit is open');
    expect(inbox(channel, 'b')).toEqual(['Your edit plan#2 of "plan" was accepted by @lead. "plan" is at version 2.']);
  });

  it('keeps appends in order, each on a line of its own, and refuses edits of others there', () => {
    const { channel } = withDocuments();
    channel.appendDocument('a', 'log', 'first');
    channel.appendDocument('lead', 'log', 'second\n');
    expect(channel.readDocument('b', 'log')).toMatchObject({ version: 3, text: 'first\nsecond\n', mode: 'append' });
    expect(() => channel.appendDocument('a', 'log', '  ')).toThrow('the entry is empty');
    expect(() => channel.appendDocument('a', 'plan', 'x')).toThrow('"plan" is not an append document: change it with edit_document');
    expect(() => channel.editDocument('a', 'log', 3, 'x', '')).toThrow('"log" is an append document: add to it with append_document; only @lead edits it');
    expect(channel.editDocument('lead', 'log', 3, 'cleared\n', 'tidy')).toMatchObject({ version: 4 });
  });

  it('refuses what breaks a limit or names nothing, saying which', () => {
    const { channel } = withDocuments();
    const big = 'x'.repeat(MAX_DOCUMENT_CHARS + 1);
    expect(() => channel.editDocument('a', 'plan', 1, big, '')).toThrow('the text is 100,001 characters long: a document holds at most 100,000 characters');
    expect(() => channel.editDocument('a', 'plan', 1, 'y', 'w'.repeat(MAX_WHY_CHARS + 1))).toThrow('"why" is 2,001 characters long');
    expect(() => channel.editDocument('a', 'plan', 2, 'y', '')).toThrow('"plan" has no version 2: its versions are 1 to 1');
    expect(() => channel.editDocument('a', 'plan', 1, PLAN, '')).toThrow('the text is version 1 of "plan" unchanged: nothing to edit');
    expect(() => channel.readDocument('a', 'plans')).toThrow('there is no document "plans"; the documents are "plan", "log"');
    channel.appendDocument('a', 'log', 'z'.repeat(MAX_DOCUMENT_CHARS - 1));
    expect(() => channel.appendDocument('a', 'log', 'more')).toThrow('this entry would make "log" 100,005 characters long');
  });

  it('rebuilds the same documents from its events', () => {
    const { channel, events } = withDocuments();
    channel.editDocument('a', 'plan', 1, PLAN.replace('two', 'TWO'), '');
    channel.editDocument('b', 'plan', 1, PLAN.replace('two', 'deux'), '');
    channel.reviewEdit('lead', 'plan#1', true, '');
    expect(channel.reviewEdit('lead', 'plan#2', true, '')).toMatchObject({ status: 'conflict' });
    channel.appendDocument('c', 'log', 'entry');
    const again = Channel.replay(team(), events);
    expect(again.finalDocuments()).toEqual(channel.finalDocuments());
    expect(again.finalDocuments().plan).toEqual({ owner: 'lead', mode: 'edit', version: 2, text: PLAN.replace('two', 'TWO') });
    expect(() => again.reviewEdit('lead', 'plan#2', true, '')).toThrow('edit plan#2 is closed already (conflict)');
  });
});
