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

/** A message as an agent reads it: `[#12 from @lead]` and the text. */
export function formatForAgent(message: Message): string {
  const from = message.kind === 'agent' ? `@${message.sender}` : message.kind === 'kickoff' ? 'kickoff' : SYSTEM;
  return `[#${message.id} from ${from}]\n${message.text}`;
}
