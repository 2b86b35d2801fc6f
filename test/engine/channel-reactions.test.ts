import { describe, expect, it } from 'vitest';
import type { ChannelEvent } from '../../src/channel/channel-events.js';
import { channelReactions } from '../../src/engine/channel-reactions.js';

/** What the run does with a channel event, in the one order docs/ARCHITECTURE.md gives. */
describe('channelReactions', () => {
  const event = { type: 'message', message: { id: 1, sender: 'lead', recipients: ['a'], text: 'hi', kind: 'message' } } as unknown as ChannelEvent;

  function reactors(replaying = false, failing?: string) {
    const seen: string[] = [];
    const step = (name: string) => () => {
      seen.push(name);
      if (name === failing) throw new Error(`${name} failed`);
    };
    return {
      seen,
      parts: {
        journal: { append: step('written'), replaying },
        people: { noticed: step('people') },
        taints: { noticed: step('taints') },
        queues: { arrived: (_: ChannelEvent, r: boolean) => (step(`arrived${r ? ' (replaying)' : ''}`)(), undefined) },
      },
    };
  }

  it('writes the event first, then the people, the taints, and last the arrivals', () => {
    const { seen, parts } = reactors();
    channelReactions(parts)(event);
    expect(seen).toEqual(['written', 'people', 'taints', 'arrived']);
  });

  it('tells the arrivals whether the journal replays', () => {
    const { seen, parts } = reactors(true);
    channelReactions(parts)(event);
    expect(seen.at(-1)).toBe('arrived (replaying)');
  });

  it('a write that throws stops the rest: nothing reacts to an event the session does not hold', () => {
    const { seen, parts } = reactors(false, 'written');
    expect(() => channelReactions(parts)(event)).toThrow('written failed');
    expect(seen).toEqual(['written']);
  });

  it('the taints come before the arrivals: a failure there leaves no call abandoned for an untainted recipient', () => {
    const { seen, parts } = reactors(false, 'taints');
    expect(() => channelReactions(parts)(event)).toThrow('taints failed');
    expect(seen).toEqual(['written', 'people', 'taints']);
  });
});
