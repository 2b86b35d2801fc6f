import type { ChannelEvent } from '../channel/channel-events.js';

/** The parts of the run that react to the channel. */
export interface ChannelReactors {
  journal: { append(event: ChannelEvent): unknown; readonly replaying: boolean };
  people: { noticed(event: ChannelEvent): void };
  taints: { noticed(event: ChannelEvent): void };
  queues: { arrived(event: ChannelEvent, replaying: boolean): void };
}

/**
 * What the run does when the channel changes, one list in one order (docs/ARCHITECTURE.md). The
 * event is written to the session first: what a later reaction writes (a taint) comes after the
 * event that caused it, as a replay compares it, and a write that throws stops the rest. Then the
 * people's proposals note when one opened. Then the taints: a message's recipients are tainted
 * before anything can make them act on it. Last, the arrivals that abandon the call in flight of
 * an `interrupt` agent the message reaches.
 */
export function channelReactions({ journal, people, taints, queues }: ChannelReactors): (event: ChannelEvent) => void {
  const reactions: ((event: ChannelEvent) => void)[] = [
    (event) => journal.append(event),
    (event) => people.noticed(event),
    (event) => taints.noticed(event),
    (event) => queues.arrived(event, journal.replaying),
  ];
  return (event) => {
    for (const react of reactions) react(event);
  };
}
