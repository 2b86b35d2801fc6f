import type { Delivery } from './channel-types.js';
import type { Inboxes } from './inboxes.js';
import type { Message } from './message.js';

/**
 * The turns in progress and the messages each was handed (docs/design.md: turns): a delivery is
 * open from `deliver` until the turn is acknowledged (its messages handled) or released (they stay
 * unread). An agent has at most one.
 */
export class Deliveries {
  private readonly pending = new Map<string, Delivery>();

  constructor(
    private readonly inboxes: Inboxes,
    private readonly messageOf: (id: number) => Message,
    /** Where a message stands in a delivery: the kickoff, conclave's notices, then each agent's in roster order. */
    private readonly rankOf: (message: Message) => number,
    /** A turn's messages are handled up to inbox entry `through`. */
    private readonly acknowledged: (agent: string, through: number) => void,
  ) {}

  /**
   * The agent's unread messages for one turn (`one`: the first only, for `queue: followup`); until
   * acknowledged or released, no other. In an order that does not depend on when they arrived: a
   * fan-in reads the same on every run.
   */
  deliver(agent: string, one = false): Readonly<Delivery> {
    if (this.pending.has(agent)) throw new Error(`@${agent} already has a turn in progress`);
    const inbox = this.inboxes.of(agent);
    const messages = inbox
      .unread()
      .slice(0, one ? 1 : undefined)
      .map((id) => this.messageOf(id));
    messages.sort((a, b) => this.rankOf(a) - this.rankOf(b) || a.id - b.id);
    const delivery = { agent, messages, through: one ? Math.min(inbox.acknowledged + 1, inbox.size) : inbox.size };
    this.pending.set(agent, { ...delivery });
    return delivery;
  }

  /**
   * `queue: steer`: what arrived for `agent`'s turn in progress since its delivery (up to inbox
   * entry `through`), which the turn now handles too; and the entry it now handles up to.
   */
  steer(agent: string, through = this.inboxes.of(agent).size): { messages: Message[]; through: number } {
    const delivery = this.inProgress(agent);
    const messages = this.inboxes
      .of(agent)
      .entries(delivery.through, through)
      .map((id) => this.messageOf(id));
    delivery.through = Math.max(delivery.through, through);
    return { messages, through: delivery.through };
  }

  /** `agent`'s turn finished: the messages it was delivered (and steered) are handled. */
  acknowledge(agent: string): void {
    const { through } = this.inProgress(agent);
    this.pending.delete(agent);
    if (through > this.inboxes.of(agent).acknowledged) this.acknowledged(agent, through);
  }

  /**
   * `agent`'s turn failed: its messages stay unread. Nothing to do when its delivery has already
   * ended: an acknowledgement that failed as it was recorded (a replay that diverged there) ended it.
   */
  release(agent: string): void {
    this.pending.delete(agent);
  }

  private inProgress(agent: string): Delivery {
    const delivery = this.pending.get(agent);
    if (!delivery) throw new Error(`@${agent} has no turn in progress`);
    return delivery;
  }
}
