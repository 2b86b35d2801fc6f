import type { ChannelEvent } from '../channel/channel-events.js';
import type { Channel, Delivery } from '../channel/channel.js';
import type { Message } from '../channel/message.js';
import type { Journal } from './journal.js';

/**
 * `queue: steer` (docs/workflow.md: queue): before each further call of a turn, the messages that
 * arrived for the agent since join the call, and the turn handles them. When they arrived depends
 * on timing, so each such join is recorded (`steered`); a resume or replay makes the same joins at
 * the same calls, and none where the recorded call had none.
 */
export function steering(
  journal: Journal,
  channel: Channel,
  delivery: Delivery,
  turn: number,
  signal: AbortSignal,
): (step: number) => Promise<readonly Message[]> {
  const agent = delivery.agent;
  return async (step) => {
    const recorded = journal.steered(agent, turn, step, signal);
    if (recorded === null) return [];
    const through = recorded !== undefined ? (await recorded).through : (await journal.live(signal), undefined);
    const messages = channel.steer(delivery, through);
    if (messages.length === 0) return [];
    journal.append({ type: 'steered', agent, turn, step, through: delivery.through, messages: messages.map((m) => m.id) });
    return messages;
  };
}

/**
 * `queue: interrupt`: each model call of such an agent gets a signal of its own, aborted when a
 * message arrives for the agent while the call is in flight (live only: a replay meets the
 * recorded `call_interrupted` instead). What arrived joins the next call, as with steer.
 */
export class Interrupts {
  private readonly inFlight = new Map<string, AbortController>();

  call<T>(agent: string, make: (interrupt: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.inFlight.set(agent, controller);
    return make(controller.signal).finally(() => {
      if (this.inFlight.get(agent) === controller) this.inFlight.delete(agent);
    });
  }

  /** A channel event: a message abandons the calls in flight of the agents it reaches (not while `replaying`). */
  arrived(event: ChannelEvent, replaying: boolean): void {
    if (event.type !== 'message' || replaying) return;
    for (const agent of event.message.recipients) this.inFlight.get(agent)?.abort();
  }
}
