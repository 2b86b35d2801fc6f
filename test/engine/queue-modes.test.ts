import { describe, expect, it } from 'vitest';
import type { ChannelEvent } from '../../src/channel/channel-events.js';
import { Channel } from '../../src/channel/channel.js';
import type { Journal } from '../../src/engine/replay/journal.js';
import { QueueModes } from '../../src/engine/queue-modes.js';
import { team } from '../channel/team.js';

/** What a journal is to the queue modes: what it recorded of steering, and what they append. */
function journalOf(recorded: Map<string, { through: number } | null> = new Map()) {
  const appended: unknown[] = [];
  let wentLive = 0;
  const journal = {
    steered: (agent: string, turn: number, step: number) => {
      const key = `${agent} ${turn} ${step}`;
      if (!recorded.has(key)) return undefined;
      const r = recorded.get(key)!;
      return r === null ? null : Promise.resolve({ type: 'steered', through: r.through });
    },
    live: async () => void wentLive++,
    append: (e: unknown) => void appended.push(e),
  };
  return { journal: journal as unknown as Journal, appended, live: () => wentLive };
}

function channelOf(events: ChannelEvent[] = []) {
  return new Channel(team(), (e) => events.push(e));
}

const signal = () => new AbortController().signal;

describe('queue modes: what a turn starts with', () => {
  it('collect takes every unread message; followup the first only, the next in a turn of its own', () => {
    const { journal } = journalOf();
    const modes = new QueueModes(journal);
    const channel = channelOf();
    channel.post('lead', '@a one');
    channel.post('lead', '@a two');
    const followup = modes.open(channel, 'a', 'followup', 1, signal());
    expect(followup.delivery.messages.map((m) => m.text)).toEqual(['@a one']);
    expect(followup.steer).toBeUndefined();
    channel.acknowledge('a');
    expect(channel.unreadCount('a')).toBe(1);
    channel.post('lead', '@a three');
    const collect = modes.open(channel, 'a', 'collect', 2, signal());
    expect(collect.delivery.messages.map((m) => m.text)).toEqual(['@a two', '@a three']);
    expect(collect.steer).toBeUndefined();
  });
});

describe('queue: steer', () => {
  it('joins what arrived since to the next call, recorded with the entry it handles up to', async () => {
    const { journal, appended } = journalOf();
    const modes = new QueueModes(journal);
    const channel = channelOf();
    channel.post('lead', '@a one');
    const turn = modes.open(channel, 'a', 'steer', 1, signal());
    expect(await turn.steer!(2)).toEqual([]);
    channel.post('lead', '@a two');
    channel.post('lead', '@b not for a');
    const joined = await turn.steer!(3);
    expect(joined.map((m) => m.text)).toEqual(['@a two']);
    expect(appended).toEqual([{ type: 'steered', agent: 'a', turn: 1, step: 3, through: 2, messages: [2] }]);
    expect(await turn.steer!(4)).toEqual([]);
    // The turn handled what was steered to it: acknowledging it reads the inbox through entry 2.
    channel.acknowledge('a');
    expect(channel.unreadCount('a')).toBe(0);
    expect(await turn.call(async (interrupt) => interrupt)).toBeUndefined();
  });

  it('a resume makes the recorded joins at the recorded calls, up to the recorded entry, and none where the call had none', async () => {
    const recorded = new Map<string, { through: number } | null>([
      ['a 1 2', null],
      ['a 1 3', { through: 2 }],
    ]);
    const { journal, appended, live } = journalOf(recorded);
    const modes = new QueueModes(journal);
    const channel = channelOf();
    channel.post('lead', '@a one');
    const turn = modes.open(channel, 'a', 'steer', 1, signal());
    channel.post('lead', '@a two');
    channel.post('lead', '@a three');
    expect(await turn.steer!(2), 'the recorded call 2 had no join').toEqual([]);
    expect((await turn.steer!(3)).map((m) => m.text)).toEqual(['@a two']);
    expect(live()).toBe(0);
    expect(appended).toEqual([{ type: 'steered', agent: 'a', turn: 1, step: 3, through: 2, messages: [2] }]);
    // Past the recording: live again, what is left joins.
    expect((await turn.steer!(4)).map((m) => m.text)).toEqual(['@a three']);
    expect(live()).toBe(1);
  });
});

describe('queue: interrupt', () => {
  it('a message for the agent aborts its call in flight; one for another agent, or one met while replaying, does not', async () => {
    const { journal } = journalOf();
    const modes = new QueueModes(journal);
    const events: ChannelEvent[] = [];
    const channel = channelOf(events);
    channel.post('lead', '@a one');
    const turn = modes.open(channel, 'a', 'interrupt', 1, signal());
    expect(turn.steer).toBeDefined();
    let seen: AbortSignal | undefined;
    const call = turn.call(
      (interrupt) =>
        new Promise<string>((resolve) => {
          seen = interrupt;
          interrupt!.addEventListener('abort', () => resolve('interrupted'));
        }),
    );
    channel.post('lead', '@b other');
    modes.arrived(events.at(-1)!, false);
    expect(seen!.aborted).toBe(false);
    channel.post('lead', '@a two');
    modes.arrived(events.at(-1)!, true);
    expect(seen!.aborted, 'a replay meets the recorded call_interrupted instead').toBe(false);
    modes.arrived({ type: 'ack', agent: 'a', through: 1 } as ChannelEvent, false);
    expect(seen!.aborted).toBe(false);
    modes.arrived(events.at(-1)!, false);
    expect(await call).toBe('interrupted');
    // The call ended: a message now aborts nothing, and the next call has a signal of its own.
    modes.arrived(events.at(-1)!, false);
    const next = await turn.call(async (interrupt) => interrupt!.aborted);
    expect(next).toBe(false);
  });

  it('a call of a collect or steer agent is not interruptible', async () => {
    const { journal } = journalOf();
    const modes = new QueueModes(journal);
    const events: ChannelEvent[] = [];
    const channel = channelOf(events);
    channel.post('lead', '@a one');
    channel.post('lead', '@b one');
    const a = modes.open(channel, 'a', 'steer', 1, signal());
    const b = modes.open(channel, 'b', 'collect', 1, signal());
    expect(await a.call(async (interrupt) => interrupt)).toBeUndefined();
    expect(await b.call(async (interrupt) => interrupt)).toBeUndefined();
    // Each mode's call gives back what the call answered.
    expect(await a.call(async () => 'steered answer')).toBe('steered answer');
    expect(await b.call(async () => 'collected answer')).toBe('collected answer');
  });
});
