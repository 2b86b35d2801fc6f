import { beforeAll, describe, expect, it } from 'vitest';
import { Channel } from '../../src/channel/channel.js';
import { loadMergeTools } from '../../src/channel/documents.js';
import { editReminders, voteReminders } from '../../src/engine/reminders.js';
import { team } from '../channel/team.js';

beforeAll(() => loadMergeTools());

function channelWithEdits() {
  const channel = new Channel(team());
  channel.documents.open({ name: 'plan', owner: 'lead', mode: 'edit', text: 'one\ntwo\n' });
  channel.documents.open({ name: 'notes', owner: 'sub', mode: 'edit', text: '' });
  channel.documents.edit('a', 'plan', 1, 'ONE\ntwo\n', '');
  channel.documents.edit('b', 'plan', 1, 'one\nTWO\n', '');
  channel.documents.edit('d', 'notes', 1, 'x\n', '');
  for (const agent of ['lead', 'sub']) {
    channel.deliver(agent);
    channel.acknowledge(agent);
  }
  return channel;
}

describe('reminding owners of the edits that wait', () => {
  it('reminds each owner once, in one message, of every edit that waits for it', () => {
    const channel = channelWithEdits();
    const reminders = editReminders(channel);
    expect(reminders.settle(() => true)).toBe(true);
    expect(channel.deliver('lead').messages.map((m) => m.text)).toEqual([
      'Edits plan#1 of "plan" from @a, plan#2 of "plan" from @b still wait for your review: accept or reject each with review_edit (read_document ' +
        'shows the edits that wait).',
    ]);
    expect(channel.deliver('sub').messages.map((m) => m.text)).toEqual([
      'Edit notes#1 of "notes" from @d still waits for your review: accept or reject it with review_edit (read_document shows the edits that wait).',
    ]);
    expect(reminders.settle(() => true)).toBe(false);
  });

  it('reminds no owner who cannot take a turn, and none of an edit reviewed', () => {
    const channel = channelWithEdits();
    channel.documents.review('lead', 'plan#1', false, '');
    channel.documents.review('lead', 'plan#2', false, '');
    const reminders = editReminders(channel);
    expect(reminders.settle((agent) => agent !== 'sub')).toBe(false);
    expect(channel.hasUnread('sub')).toBe(false);
    expect(reminders.settle(() => true)).toBe(true);
    expect(channel.unreadCount('sub')).toBe(1);
    expect(channel.hasUnread('lead'), 'its edits are reviewed').toBe(false);
  });
});

describe('reminding voters of the votes that wait', () => {
  function channelWithProposals() {
    const channel = new Channel(team());
    channel.propose('lead', { id: 'q', question: 'Which?', options: ['x', 'y'], voters: ['a', 'b', 'c'] });
    channel.propose('lead', { id: 'r', question: 'Ship?', options: ['yes', 'no'], voters: ['a', 'd'] });
    channel.vote('b', 'q', 'x');
    for (const agent of ['a', 'b', 'c', 'd']) {
      channel.deliver(agent);
      channel.acknowledge(agent);
    }
    return channel;
  }

  it('reminds each voter that can take a turn once, one message per proposal; then the proposals close with the votes cast', () => {
    const channel = channelWithProposals();
    const closed: string[] = [];
    const reminders = voteReminders(channel, (p) => closed.push(`${p.id} ${p.status}`));
    expect(reminders.settle((agent) => agent !== 'c')).toBe(true);
    expect(channel.deliver('a').messages.map((m) => m.text)).toEqual([
      'Proposal "q" is still waiting for your vote: Which? Use the vote tool.',
      'Proposal "r" is still waiting for your vote: Ship? Use the vote tool.',
    ]);
    expect(channel.deliver('c').messages).toEqual([]);
    expect(channel.deliver('d').messages.map((m) => m.recipients)).toEqual([['a', 'd']]);
    expect(closed).toEqual([]);
    // Reminded already, or unable to take a turn: nobody is reminded again, and both close.
    expect(reminders.settle(() => false)).toBe(true);
    expect(closed.map((c) => c.split(' ')[0])).toEqual(['q', 'r']);
    expect(reminders.settle(() => true)).toBe(false);
  });
});
