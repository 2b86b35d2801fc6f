import { describe, expect, it } from 'vitest';
import { Channel } from '../../src/channel/channel.js';
import { ChannelError } from '../../src/channel/channel-error.js';
import type { ChannelEvent } from '../../src/channel/channel-events.js';
import { team } from './team.js';

const recipientsOf = (channel: Channel, sender: string, text: string) => channel.post(sender, text).message!.recipients;

describe('routing', () => {
  it('sends a kickoff without mentions to the lead, and one with mentions to those named', () => {
    const channel = new Channel(team());
    expect(channel.postKickoff('Please start.').recipients).toEqual(['lead']);
    expect(channel.postKickoff('@a and @b, begin').recipients).toEqual(['a', 'b']);
    expect(channel.postKickoff('@all begin').recipients).toEqual(['lead', 'a', 'b', 'c', 'sub', 'd']);
  });

  it('stores the recipients resolved when the message was written, once', () => {
    const channel = new Channel(team());
    const message = channel.post('lead', '@a @b @a twice')!.message!;
    expect(message).toEqual({ id: 1, kind: 'agent', sender: 'lead', text: '@a @b @a twice', recipients: ['a', 'b'] });
    expect(channel.message(1)).toEqual(message);
  });

  it('reaches everyone but the sender with @all, and ignores a self-mention', () => {
    const channel = new Channel(team());
    expect(recipientsOf(channel, 'a', '@all done')).toEqual(['lead', 'b', 'c', 'sub', 'd']);
    expect(recipientsOf(channel, 'lead', '@lead note to self, @b go')).toEqual(['b']);
  });

  it("sends a worker's message without recipients to its manager, nested teams included", () => {
    const channel = new Channel(team());
    expect(recipientsOf(channel, 'a', 'Here is my answer.')).toEqual(['lead']);
    expect(recipientsOf(channel, 'd', 'Done.')).toEqual(['sub']);
    expect(recipientsOf(channel, 'sub', 'My team is done.')).toEqual(['lead']);
    expect(recipientsOf(channel, 'd', '@d talking to myself')).toEqual(['sub']);
  });

  it("lets the lead's message without mentions reach no one", () => {
    const channel = new Channel(team());
    expect(recipientsOf(channel, 'lead', 'Thinking aloud.')).toEqual([]);
  });

  it('posts nothing for empty text', () => {
    const channel = new Channel(team());
    expect(channel.post('a', '  \n ')).toEqual({});
    expect(channel.length).toBe(0);
  });

  it('tells the sender, by a system notice, which mentioned names are no agents', () => {
    const channel = new Channel(team());
    const { message, notice } = channel.post('lead', '@a and @securty, please check');
    expect(message!.recipients).toEqual(['a']);
    expect(notice).toEqual({
      id: 2,
      kind: 'system',
      sender: 'system',
      recipients: ['lead'],
      text: 'Your last message mentions @securty, which is not an agent, so it did not receive it. The agents are @lead, @a, @b, @c, @sub, @d.',
    });
  });

  it('still routes a worker message whose only mention is unknown to its manager', () => {
    const channel = new Channel(team());
    const { message, notice } = channel.post('b', '@leed: finished');
    expect(message!.recipients).toEqual(['lead']);
    expect(notice!.recipients).toEqual(['b']);
  });

  it('rejects a sender that is no agent', () => {
    const channel = new Channel(team());
    expect(() => channel.post('ghost', 'hi')).toThrow(ChannelError);
  });
});

describe('inboxes', () => {
  it('delivers unread messages in order, and only what was addressed to the agent', () => {
    const channel = new Channel(team());
    channel.postKickoff('@a first');
    channel.post('lead', '@b not for a');
    channel.post('lead', '@a second');
    const delivery = channel.deliver('a');
    expect(delivery.messages.map((m) => m.text)).toEqual(['@a first', '@a second']);
    expect(delivery.through).toBe(2);
  });

  it('acknowledges only what the finished turn received: later messages stay unread', () => {
    const channel = new Channel(team());
    channel.post('lead', '@a one');
    channel.deliver('a');
    channel.post('lead', '@a two, while a is busy');
    channel.acknowledge('a');
    expect(channel.unreadCount('a')).toBe(1);
    const next = channel.deliver('a');
    expect(next.messages.map((m) => m.text)).toEqual(['@a two, while a is busy']);
  });

  it("leaves a failed turn's messages unread, delivered again with new ones", () => {
    const channel = new Channel(team());
    channel.post('lead', '@a one');
    channel.deliver('a');
    channel.release('a');
    channel.post('lead', '@a two');
    expect(channel.deliver('a').messages.map((m) => m.text)).toEqual(['@a one', '@a two']);
  });

  it('refuses a second delivery to an agent whose turn is in progress', () => {
    const channel = new Channel(team());
    channel.post('lead', '@a one');
    channel.deliver('a');
    expect(() => channel.deliver('a')).toThrow('@a already has a turn in progress');
  });

  it('answers whether an agent has unread messages', () => {
    const channel = new Channel(team());
    expect(channel.hasUnread('a')).toBe(false);
    channel.post('lead', '@a go');
    expect(channel.hasUnread('a')).toBe(true);
    channel.deliver('a');
    channel.acknowledge('a');
    expect(channel.hasUnread('a')).toBe(false);
  });

  it('lists the agents with unread messages in roster order, spawned ones after, as they change', () => {
    const channel = new Channel(team());
    expect(channel.withUnread()).toEqual([]);
    channel.post('lead', '@c @a go');
    expect(channel.withUnread()).toEqual(['a', 'c']);
    channel.join({ agent: 'checker-1', template: 'checker', role: 'worker', parent: 'lead', depth: 1 }, 'check');
    channel.post('lead', '@b more');
    expect(channel.withUnread()).toEqual(['a', 'b', 'c', 'checker-1']);
    // A second message to an agent already listed changes nothing; a turn that read all removes it.
    channel.post('lead', '@a again');
    channel.deliver('a');
    channel.acknowledge('a');
    expect(channel.withUnread()).toEqual(['b', 'c', 'checker-1']);
    channel.deliver('b');
    channel.release('b');
    expect(channel.withUnread()).toEqual(['b', 'c', 'checker-1']);
  });
});

describe('history', () => {
  it('returns the last messages, optionally from one sender', () => {
    const channel = new Channel(team());
    for (let i = 1; i <= 30; i++) channel.post(i % 2 ? 'a' : 'b', `message ${i}`);
    expect(channel.history().map((m) => m.id)).toEqual(Array.from({ length: 20 }, (_, i) => i + 11));
    expect(channel.history({ sender: 'b', last: 3 }).map((m) => m.text)).toEqual(['message 26', 'message 28', 'message 30']);
    expect(channel.lastMessageFrom('a')!.text).toBe('message 29');
  });
});

describe('replay', () => {
  it('rebuilds exactly the state that the events produced', () => {
    const events: ChannelEvent[] = [];
    const live = new Channel(team(), (e) => events.push(e));
    live.postKickoff('@lead review this');
    live.deliver('lead');
    live.acknowledge('lead');
    live.post('lead', '@a @b @c please look; @nobody too');
    live.propose('lead', { id: 'verdict', question: 'Ship it?', options: ['yes', 'no'], voters: ['a', 'b', 'c'] });
    live.vote('a', 'verdict', 'yes', 'looks fine');
    live.deliver('b');
    live.turnEnded('a');
    live.vote('b', 'verdict', 'no', 'a bug');
    live.vote('b', 'verdict', 'yes', 'on second thought');
    live.acknowledge('b');
    live.propose('a', { question: 'Lunch?', options: ['pizza', 'soup'], rule: 'plurality', deadline_turns: 2 });
    live.turnEnded('b');
    live.turnEnded('c');
    live.post('d', 'done');

    const rebuilt = Channel.replay(team(), JSON.parse(JSON.stringify(events)));
    expect(rebuilt.snapshot()).toEqual(live.snapshot());
    expect(live.proposal('verdict')!.status).toBe('decided');
    expect(live.proposal('p2')!.status).toBe('no_decision');
  });

  it('refuses events out of order', () => {
    const events: ChannelEvent[] = [];
    const live = new Channel(team(), (e) => events.push(e));
    live.post('a', 'one');
    live.post('a', 'two');
    expect(() => Channel.replay(team(), [events[1]!, events[0]!])).toThrow('message #2 out of order: expected #1');
  });
});
