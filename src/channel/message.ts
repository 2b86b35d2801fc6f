/** Who wrote a message: an agent, or conclave itself for the kickoff and notices. */
export type MessageKind = 'agent' | 'system' | 'kickoff';

/** The sender of kickoff and system messages. */
export const SYSTEM = 'system';

export interface Message {
  /** 1-based position in the channel. */
  id: number;
  kind: MessageKind;
  sender: string;
  text: string;
  /** Resolved once, when the message was written. */
  recipients: string[];
}

/**
 * A delivered message as an agent reads it: `[from @lead]` and the text. No channel id: ids
 * follow arrival order, which differs between runs, and the request must not.
 */
export function formatForAgent(message: Message): string {
  return `[from ${senderOf(message)}]\n${message.text}`;
}

/** A message in the channel's history, with its id: `[#12 from @lead]` and the text. */
export function formatWithId(message: Message): string {
  return `[#${message.id} from ${senderOf(message)}]\n${message.text}`;
}

function senderOf(message: Message): string {
  return message.kind === 'agent' ? `@${message.sender}` : message.kind === 'kickoff' ? 'kickoff' : SYSTEM;
}

/** The last `last` messages (default 20, at most 200), from `sender` if given, oldest first. */
export function lastMessages(messages: readonly Message[], options: { sender?: string; last?: number }): Message[] {
  const last = Math.max(1, Math.min(options.last ?? 20, 200));
  const out: Message[] = [];
  for (let i = messages.length - 1; i >= 0 && out.length < last; i--) {
    const m = messages[i]!;
    if (options.sender === undefined || m.sender === options.sender) out.push(m);
  }
  return out.reverse();
}
