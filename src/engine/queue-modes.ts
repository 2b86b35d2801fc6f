import { Interrupted } from '../abort-reasons.js';
import type { ChannelEvent } from '../channel/channel-events.js';
import type { Channel, Delivery } from '../channel/channel.js';
import type { Message } from '../channel/message.js';
import type { QueueMode } from '../workflow/types.js';
import type { Journal } from './replay/journal.js';

/** What a turn is given by its agent's queue mode: the messages it starts with, how its calls are made, and what joins them. */
export interface TurnArrivals {
  readonly delivery: Readonly<Delivery>;
  /** Makes one model call of the turn; under `interrupt`, with a signal that a message arriving for the agent aborts. */
  call<T>(make: (interrupt?: AbortSignal) => Promise<T>): Promise<T>;
  /** `steer` and `interrupt`: the messages that arrived since, to join call `step`. */
  steer?: (step: number) => Promise<readonly Message[]>;
}

/**
 * What happens to messages that arrive for an agent while it is in a turn (docs/workflow.md:
 * queue), the one place that knows the four modes:
 * - `collect`: the turn gets every unread message; what arrives waits for the next turn.
 * - `followup`: the turn gets the first unread message only; each later one has a turn of its own.
 * - `steer`: before each further call of the turn, what arrived since joins the call, and the
 *   turn handles it. When it arrived depends on timing, so each join is recorded (`steered`); a
 *   resume or replay makes the same joins at the same calls, and none where the recorded call had none.
 * - `interrupt`: as steer, and a message arriving while a call is in flight abandons the call
 *   (live only: a replay meets the recorded `call_interrupted` instead); what arrived joins the next.
 */
export class QueueModes {
  /** The interrupt signals of `interrupt` agents' calls in flight. */
  private readonly inFlight = new Map<string, AbortController>();

  constructor(private readonly journal: Journal) {}

  /** Opens `agent`'s turn on `channel`: its delivery, and how the turn's calls take what arrives. */
  open(channel: Channel, agent: string, mode: QueueMode, turn: number, signal: AbortSignal): TurnArrivals {
    const delivery = channel.deliver(agent, mode === 'followup');
    if (mode === 'collect' || mode === 'followup') return { delivery, call: (make) => make() };
    const steer = this.steering(channel, agent, turn, signal);
    if (mode === 'steer') return { delivery, call: (make) => make(), steer };
    return { delivery, call: (make) => this.interruptible(agent, make), steer };
  }

  /** A channel event: a message abandons the calls in flight of the `interrupt` agents it reaches (not while `replaying`). */
  arrived(event: ChannelEvent, replaying: boolean): void {
    if (event.type !== 'message' || replaying) return;
    for (const agent of event.message.recipients) this.inFlight.get(agent)?.abort(new Interrupted(event.message.id));
  }

  private steering(channel: Channel, agent: string, turn: number, signal: AbortSignal): (step: number) => Promise<readonly Message[]> {
    const { journal } = this;
    return async (step) => {
      const recorded = journal.steered(agent, turn, step, signal);
      if (recorded === null) return [];
      const upTo = recorded !== undefined ? (await recorded).through : (await journal.live(signal), undefined);
      const { messages, through } = channel.steer(agent, upTo);
      if (messages.length === 0) return [];
      journal.append({ type: 'steered', agent, turn, step, through, messages: messages.map((m) => m.id) });
      return messages;
    };
  }

  private interruptible<T>(agent: string, make: (interrupt: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.inFlight.set(agent, controller);
    return make(controller.signal).finally(() => {
      if (this.inFlight.get(agent) === controller) this.inFlight.delete(agent);
    });
  }
}
