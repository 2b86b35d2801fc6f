import type { Message } from './message.js';
import type { ProposalView } from './proposal.js';

/** The unread messages handed to one turn of an agent. */
export interface Delivery {
  agent: string;
  messages: Message[];
  /** The inbox entry the turn handles up to, once it finishes (`queue: steer` moves it on, in the channel's own copy). */
  through: number;
}

/** A channel's whole state, as tests compare a channel rebuilt from its events with the original. */
export interface ChannelSnapshot {
  messages: Message[];
  inboxes: Record<string, { ids: number[]; handled: number }>;
  proposals: ProposalView[];
  turns: number;
}
