import type { Message } from './message.js';

/** The unread messages handed to one turn of an agent. */
export interface Delivery {
  agent: string;
  messages: Message[];
  /** The inbox entry the turn handles up to, once it finishes (`queue: steer` moves it on). */
  through: number;
}
