import { beforeAll, describe, expect, it } from 'vitest';
import { Channel } from '../../src/channel/channel.js';
import { loadMergeTools } from '../../src/channel/documents.js';
import { EditReminders } from '../../src/engine/edit-reminders.js';
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
    const reminders = new EditReminders(channel);
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
    const reminders = new EditReminders(channel);
    expect(reminders.settle((agent) => agent !== 'sub')).toBe(false);
    expect(channel.hasUnread('sub')).toBe(false);
    expect(reminders.settle(() => true)).toBe(true);
    expect(channel.unreadCount('sub')).toBe(1);
    expect(channel.hasUnread('lead'), 'its edits are reviewed').toBe(false);
  });
});
