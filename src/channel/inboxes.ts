import { ChannelError } from './channel-error.js';
import { Inbox } from './inbox.js';

/**
 * Every agent's inbox, and which agents have unread messages, kept as messages arrive and turns
 * acknowledge them, so that a scheduler need not ask every inbox after every turn.
 */
export class Inboxes {
  private readonly byAgent = new Map<string, Inbox>();
  private readonly unread = new Set<string>();
  /** `unread` in roster order, until it changes. */
  private unreadInOrder: readonly string[] | undefined;

  constructor(
    agents: Iterable<string>,
    private readonly rankOf: (agent: string) => number,
  ) {
    for (const agent of agents) this.add(agent);
  }

  /** An agent that joined (spawned), with an empty inbox. */
  add(agent: string): void {
    this.byAgent.set(agent, new Inbox());
  }

  of(agent: string): Inbox {
    const inbox = this.byAgent.get(agent);
    if (!inbox) throw new ChannelError(`"${agent}" is not an agent`);
    return inbox;
  }

  /** Message `id` reaches `agent`. */
  push(agent: string, id: number): void {
    this.of(agent).push(id);
    if (!this.unread.has(agent)) {
      this.unread.add(agent);
      this.unreadInOrder = undefined;
    }
  }

  /** `agent`'s first `through` entries are handled. */
  acknowledge(agent: string, through: number): void {
    const inbox = this.of(agent);
    inbox.acknowledge(through);
    if (inbox.unreadCount === 0 && this.unread.delete(agent)) this.unreadInOrder = undefined;
  }

  /** The agents with unread messages, in roster order. */
  withUnread(): readonly string[] {
    return (this.unreadInOrder ??= [...this.unread].sort((a, b) => this.rankOf(a) - this.rankOf(b)));
  }

  toJSON(): Record<string, ReturnType<Inbox['toJSON']>> {
    return Object.fromEntries([...this.byAgent].map(([agent, inbox]) => [agent, inbox.toJSON()]));
  }
}
