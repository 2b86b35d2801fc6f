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
  channel.documents.open({ name: 'plan', owner: 'lead', mode: 'edit', text: PLAN });
  channel.documents.open({ name: 'log', owner: 'lead', mode: 'append', text: '' });
  return { channel, events };
}

const inbox = (channel: Channel, agent: string) => channel.deliver(agent).messages.map((m) => m.text);

describe('documents with an owner', () => {
  it('applies the owner’s edit at once, and one against an older version merged with the changes since', () => {
    const { channel } = withDocuments();
    expect(channel.documents.edit('lead', 'plan', 1, PLAN.replace('one', 'ONE'), 'caps')).toEqual({ document: 'plan', version: 2, applied: true });
    expect(channel.documents.edit('lead', 'plan', 1, PLAN.replace('five', 'FIVE'), '')).toMatchObject({ version: 3 });
    expect(channel.documents.read('a', 'plan')).toMatchObject({ version: 3, text: 'ONE\ntwo\nthree\nfour\nFIVE\n', owner: 'lead' });
    expect(() => channel.documents.edit('lead', 'plan', 1, PLAN.replace('one', 'uno'), '')).toThrow(
      /your edit overlaps changes made since version 1 \(the document is at version 3\): nothing changed[\s\S]*<<<<<<< version 3 \(now\)\nONE\n\|\|\|\|\|\|\| version 1 \(the edit's base\)\none\n=======\nuno\n>>>>>>> your edit/,
    );
  });

  it('an owner’s edit against an older version that makes again a change already made adds no version', () => {
    const { channel, events } = withDocuments();
    channel.documents.edit('lead', 'plan', 1, PLAN.replace('one', 'ONE'), 'caps');
    expect(() => channel.documents.edit('lead', 'plan', 1, PLAN.replace('one', 'ONE'), 'caps again')).toThrow(
      'your edit makes no change to version 2 of "plan" (what it changes is there already): nothing changed',
    );
    expect(channel.documents.read('a', 'plan')).toMatchObject({ version: 2 });
    expect(events.filter((e) => e.type === 'document_changed')).toHaveLength(1);
  });

  it('numbers other agents’ edits per document, tells the owner, and lists them open', () => {
    const { channel } = withDocuments();
    expect(channel.documents.edit('a', 'plan', 1, PLAN.replace('two', 'TWO'), 'louder')).toMatchObject({ edit: 'plan#1' });
    expect(channel.documents.edit('b', 'plan', 1, PLAN.replace('four', 'FOUR'), '')).toMatchObject({ edit: 'plan#2' });
    const [first, second] = inbox(channel, 'lead');
    expect(first).toContain('Edit plan#1 of document "plan" from @a, against version 1: louder');
    expect(first).toContain('-two\n+TWO');
    expect(second).toContain('from @b, against version 1: (no reason given)');
    expect(channel.documents.read('lead', 'plan').open_edits).toEqual([
      { edit: 'plan#1', author: 'a', base: 1, why: 'louder' },
      { edit: 'plan#2', author: 'b', base: 1, why: '' },
    ]);
    expect(channel.documents.read('lead', 'plan').version).toBe(1);
  });

  it('lets only the owner review, once per edit; an edit that changes nothing merged adds no version', () => {
    const { channel } = withDocuments();
    channel.documents.edit('a', 'plan', 1, PLAN.replace('two', 'TWO'), '');
    channel.documents.edit('b', 'plan', 1, PLAN.replace('two', 'TWO'), 'same');
    expect(() => channel.documents.review('a', 'plan#1', true, '')).toThrow('only @lead, who owns "plan", reviews its edits');
    expect(channel.documents.review('lead', 'plan#1', true, 'ok')).toEqual({ edit: 'plan#1', status: 'accepted', version: 2 });
    expect(() => channel.documents.review('lead', 'plan#1', false, '')).toThrow('edit plan#1 is closed already (accepted)');
    expect(channel.documents.review('lead', 'plan#2', true, '')).toEqual({ edit: 'plan#2', status: 'accepted', version: 2 });
    expect(() => channel.documents.review('lead', 'plan#9', true, '')).toThrow('there is no edit "plan#9"; no edit is open');
    expect(inbox(channel, 'b')).toEqual(['Your edit plan#2 of "plan" was accepted by @lead. "plan" is at version 2.']);
  });

  it('keeps appends in order, each on a line of its own, and refuses edits of others there', () => {
    const { channel } = withDocuments();
    channel.documents.append('a', 'log', 'first');
    channel.documents.append('lead', 'log', 'second\n');
    expect(channel.documents.read('b', 'log')).toMatchObject({ version: 3, text: 'first\nsecond\n', mode: 'append' });
    expect(() => channel.documents.append('a', 'log', '  ')).toThrow('the entry is empty');
    expect(() => channel.documents.append('a', 'plan', 'x')).toThrow('"plan" is not an append document: change it with edit_document');
    expect(() => channel.documents.edit('a', 'log', 3, 'x', '')).toThrow('"log" is an append document: add to it with append_document; only @lead edits it');
    expect(channel.documents.edit('lead', 'log', 3, 'cleared\n', 'tidy')).toMatchObject({ version: 4 });
  });

  it('refuses what breaks a limit or names nothing, saying which', () => {
    const { channel } = withDocuments();
    const big = 'x'.repeat(MAX_DOCUMENT_CHARS + 1);
    expect(() => channel.documents.edit('a', 'plan', 1, big, '')).toThrow('the text is 100,001 characters long: a document holds at most 100,000 characters');
    expect(() => channel.documents.edit('a', 'plan', 1, 'y', 'w'.repeat(MAX_WHY_CHARS + 1))).toThrow('"why" is 2,001 characters long');
    expect(() => channel.documents.edit('a', 'plan', 2, 'y', '')).toThrow('"plan" has no version 2: its versions are 1 to 1');
    expect(() => channel.documents.edit('a', 'plan', 1, PLAN, '')).toThrow('the text is version 1 of "plan" unchanged: nothing to edit');
    expect(() => channel.documents.read('a', 'plans')).toThrow('there is no document "plans"; the documents are "plan", "log"');
    channel.documents.append('a', 'log', 'z'.repeat(MAX_DOCUMENT_CHARS - 1));
    expect(() => channel.documents.append('a', 'log', 'more')).toThrow('this entry would make "log" 100,005 characters long');
  });

  it('rebuilds the same documents from its events', () => {
    const { channel, events } = withDocuments();
    channel.documents.edit('a', 'plan', 1, PLAN.replace('two', 'TWO'), '');
    channel.documents.edit('b', 'plan', 1, PLAN.replace('two', 'deux'), '');
    channel.documents.review('lead', 'plan#1', true, '');
    expect(channel.documents.review('lead', 'plan#2', true, '')).toMatchObject({ status: 'conflict' });
    channel.documents.append('c', 'log', 'entry');
    const again = Channel.replay(team(), events);
    expect(again.documents.final()).toEqual(channel.documents.final());
    expect(again.documents.final().plan).toEqual({ owner: 'lead', mode: 'edit', version: 2, text: PLAN.replace('two', 'TWO'), open_edits: [] });
    expect(() => again.documents.review('lead', 'plan#2', true, '')).toThrow('edit plan#2 is closed already (conflict)');
  });

  it('says in full what the owner and the author are told, and what each tool returns', () => {
    const { channel } = withDocuments();
    channel.documents.edit('lead', 'plan', 1, PLAN.replace('one', 'ONE'), '');
    expect(channel.documents.edit('a', 'plan', 1, PLAN.replace('five', 'FIVE'), 'shout')).toEqual({
      edit: 'plan#1',
      status: "waiting for @lead's review: you will be told the outcome",
    });
    expect(inbox(channel, 'lead')).toEqual([
      'Edit plan#1 of document "plan" from @a, against version 1 (the document is at version 2 now): shout\n' +
        '```diff\n--- plan version 1\n+++ plan#1\n@@ -2,4 +2,4 @@\n two\n three\n four\n-five\n+FIVE\n```\n' +
        'You own "plan": accept or reject it with review_edit {"edit": "plan#1", "accept": true or false, "why": "…"}.',
    ]);
    channel.acknowledge('lead');
    expect(channel.documents.review('lead', 'plan#1', false, 'too loud')).toEqual({ edit: 'plan#1', status: 'rejected' });
    expect(channel.documents.read('lead', 'plan')).toEqual({ document: 'plan', owner: 'lead', mode: 'edit', version: 2, text: PLAN.replace('one', 'ONE') });
    expect(channel.documents.read('a', 'plan').note).toBe("only @lead changes it: your edit_document waits for @lead's review");
    expect(inbox(channel, 'a')).toEqual(['Your edit plan#1 of "plan" was rejected by @lead: too loud. It did not change the document.']);
    channel.acknowledge('a');
    channel.documents.edit('b', 'plan', 1, PLAN.replace('one', 'uno'), '');
    expect(channel.documents.review('lead', 'plan#2', true, '')).toEqual({
      edit: 'plan#2',
      status: 'conflict',
      note: 'not merged; @b is told to edit again against version 2',
      conflict: "<<<<<<< version 2 (now)\nONE\n||||||| version 1 (the edit's base)\none\n=======\nuno\n>>>>>>> plan#2",
    });
    expect(inbox(channel, 'b')).toEqual([
      'Your edit plan#2 of "plan" could not be merged: it overlaps changes made since version 1, its base (the document is at version 2). It did not ' +
        'change the document: read it with read_document and edit again against version 2. The conflict:\n' +
        "```text\n<<<<<<< version 2 (now)\nONE\n||||||| version 1 (the edit's base)\none\n=======\nuno\n>>>>>>> plan#2\n```",
    ]);
    expect(channel.documents.append('c', 'log', 'x')).toEqual({ document: 'log', version: 2 });
  });

  it('lists only the open edits of the document read, and names the open ones when an edit is unknown', () => {
    const { channel } = withDocuments();
    channel.documents.edit('a', 'plan', 1, PLAN.replace('one', '1'), '');
    channel.documents.edit('b', 'plan', 1, PLAN.replace('five', '5'), '');
    channel.documents.review('lead', 'plan#1', true, '');
    expect(channel.documents.read('lead', 'plan').open_edits).toEqual([{ edit: 'plan#2', author: 'b', base: 1, why: '' }]);
    expect(channel.documents.read('lead', 'log').open_edits).toBeUndefined();
    channel.documents.open({ name: 'notes', owner: 'sub', mode: 'edit', text: '' });
    channel.documents.edit('d', 'notes', 1, 'n\n', '');
    expect(Object.fromEntries(Object.entries(channel.documents.final()).map(([name, d]) => [name, d.open_edits]))).toEqual({
      plan: ['plan#2'],
      log: [],
      notes: ['notes#1'],
    });
    expect(() => channel.documents.review('lead', 'plan#3', true, '')).toThrow('there is no edit "plan#3"; open edits: plan#2');
    expect(() => channel.documents.open({ name: 'plan', owner: 'lead', mode: 'edit', text: '' })).toThrow('document "plan" is open already');
  });

  it('holds each limit at its edge, and merges several changes, or shows several conflicts', () => {
    const { channel } = withDocuments();
    expect(channel.documents.edit('lead', 'plan', 1, 'x'.repeat(MAX_DOCUMENT_CHARS), 'w'.repeat(MAX_WHY_CHARS))).toMatchObject({ version: 2 });
    expect(() => channel.documents.edit('a', 'plan', 0, 'y', '')).toThrow('"plan" has no version 0: its versions are 1 to 2');
    expect(() => channel.documents.edit('a', 'plan', 1.5, 'y', '')).toThrow('"plan" has no version 1.5');
    expect(() => channel.documents.edit('a', 'plan', 3, 'y', '')).toThrow('"plan" has no version 3');
    expect(() => channel.documents.review('lead', 'plan#1', true, 'w'.repeat(MAX_WHY_CHARS + 1))).toThrow('there is no edit "plan#1"');
    channel.documents.append('a', 'log', 'z'.repeat(MAX_DOCUMENT_CHARS - 1));
    expect(() => channel.documents.append('a', 'log', 'z')).toThrow(
      'this entry would make "log" 100,002 characters long: a document holds at most 100,000 characters',
    );
    // The merged text is held to the limit too: the edit stays open.
    const other = withDocuments().channel;
    other.documents.edit('a', 'plan', 1, `${'y'.repeat(MAX_DOCUMENT_CHARS - 30)}\n${PLAN.slice(4)}`, '');
    other.documents.edit('lead', 'plan', 1, PLAN.replace('five', 'f'.repeat(30)), '');
    expect(() => other.documents.review('lead', 'plan#1', true, '')).toThrow('the merged text is 100,017 characters long');
    expect(other.documents.read('lead', 'plan').open_edits).toHaveLength(1);
    expect(() => other.documents.review('lead', 'plan#1', true, 'w'.repeat(MAX_WHY_CHARS + 1))).toThrow(
      '"why" is 2,001 characters long: keep it within 2,000 characters',
    );
  });

  it('merges changes on either side of an untouched line, and shows each conflict of an edit', async () => {
    const { mergeEdit, unifiedDiff } = await import('../../src/channel/merge.js');
    const labels = { current: 'now', base: 'base', edit: 'edit' };
    expect(mergeEdit(PLAN, PLAN, 'new\n', labels)).toEqual({ text: 'new\n' });
    expect(mergeEdit(PLAN.replace('one', '1'), PLAN, PLAN.replace('five', '5'), labels)).toEqual({ text: '1\ntwo\nthree\nfour\n5\n' });
    expect(mergeEdit(PLAN.replace('one', '1').replace('five', '5'), PLAN, PLAN.replace('one', 'I').replace('five', 'V'), labels)).toEqual({
      conflict: '<<<<<<< now\n1\n||||||| base\none\n=======\nI\n>>>>>>> edit\n…\n<<<<<<< now\n5\n||||||| base\nfive\n=======\nV\n>>>>>>> edit',
    });
    // Texts node-diff3 takes whole are aligned as it aligns them: here the deleted "a" is the first, and both changes merge.
    expect(mergeEdit('c\na\nx\n\nb', 'a\na\nx\n\nb', 'a\nx\n\nb', labels)).toEqual({ text: 'c\na\nx\n\nb' });
    // Past the bound, the lines alike at both ends are set aside; what is left must still be small enough.
    const blanks = (n: number) => Array.from({ length: n }, (_, i) => (i % 2 ? '' : `p${i}`));
    const wide = [...blanks(6_000), 'end'].join('\n');
    expect(mergeEdit(`${wide}\nmine`, wide, `${wide}\ntheirs`, labels)).toEqual({ conflict: '<<<<<<< now\nmine\n||||||| base\n=======\ntheirs\n>>>>>>> edit' });
    expect(mergeEdit(`mine\n${wide}`, wide, `${wide}\ntheirs`, labels)).toMatchObject({ tooCostly: expect.stringMatching(/^the 6,001 lines between/) });
    const long = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    expect(unifiedDiff('a', long, 'b', long.replace('line 10', 'LINE 10'))).toBe(
      '--- a\n+++ b\n@@ -8,7 +8,7 @@\n line 7\n line 8\n line 9\n-line 10\n+LINE 10\n line 11\n line 12\n line 13',
    );
  });

  it('refuses events out of order when it is rebuilt', () => {
    const { events } = withDocuments();
    expect(() =>
      Channel.replay(team(), [...events, { type: 'document_changed', document: 'plan', version: 3, author: 'a', text: '', why: '', edit: null }]),
    ).toThrow('document "plan" version 3 out of order: expected 2');
  });

  it('bounds the work of a merge and of a diff: a large document of repeated lines is refused a merge it would take seconds over, not frozen on', () => {
    // 5,000 lines, every other one blank, as Markdown has them: node-diff3 alone takes about 30 s over two changes at either end.
    const big = `${Array.from({ length: 5_000 }, (_, i) => (i % 2 ? '' : `paragraph ${i}`)).join('\n')}\n`;
    const change = (text: string, from: string, to: string) => text.replace(`${from}\n`, `${to}\n`);
    const { channel } = withDocuments();
    channel.documents.edit('lead', 'plan', 1, big, 'the long plan');
    const started = Date.now();
    channel.documents.edit('a', 'plan', 2, change(big, 'paragraph 2000', 'PARAGRAPH 2000'), '');
    channel.documents.edit('b', 'plan', 2, change(big, 'paragraph 2010', 'PARAGRAPH 2010'), '');
    channel.documents.edit('c', 'plan', 2, change(big, 'paragraph 10', 'PARAGRAPH 10'), '');
    expect(channel.documents.review('lead', 'plan#1', true, '')).toMatchObject({ status: 'accepted', version: 3 });
    // Two changes ten lines apart merge: the lines alike at both ends are set aside.
    expect(channel.documents.review('lead', 'plan#2', true, '')).toMatchObject({ status: 'accepted', version: 4 });
    expect(channel.documents.read('lead', 'plan').text).toBe(change(change(big, 'paragraph 2000', 'PARAGRAPH 2000'), 'paragraph 2010', 'PARAGRAPH 2010'));
    // A change 2,000 lines from the others: too many lines alike between them.
    const refused = channel.documents.review('lead', 'plan#3', true, '');
    expect(refused).toMatchObject({ status: 'conflict', note: 'not merged; @c is told to edit again against version 4' });
    expect(refused.why).toMatch(/^the 2,001 lines between the changes hold too many equal lines to merge here \(.* steps, past 2\.5e\+8\)$/);
    expect(inbox(channel, 'c').at(-1)).toMatch(
      /could not be merged: with the changes made since version 2, its base .*too many equal lines.*edit again against version 4\.$/s,
    );
    // The owner's own stale edit is held to the same bound.
    expect(() => channel.documents.edit('lead', 'plan', 2, change(big, 'paragraph 4990', 'P'), '')).toThrow(
      /^your edit cannot be merged with the changes made since version 2: the .* lines between/,
    );
    // A rewrite of every line is shown whole, not as a diff of 5,000 lines.
    channel.documents.edit('c', 'plan', 4, big.replaceAll('paragraph', 'section'), 'rename');
    expect(inbox(channel, 'lead').at(-1)).toMatch(
      /^Edit plan#4 of document "plan" from @c, against version 4: rename\nIt changes too many lines to show as a diff; its whole text:\n```text\nsection 0\n/,
    );
    expect(Date.now() - started, 'the merges and diffs took their bounded time, not seconds each').toBeLessThan(20_000);
  });
});
