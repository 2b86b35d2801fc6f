import type { Message } from './message.js';
import type { ProposalSpec } from './proposal.js';

/**
 * Every change to a channel, in the order it happened. Applying the same events to a new
 * channel rebuilds the same state; the session file records them for resume.
 */
export type ChannelEvent =
  | { type: 'message'; message: Message }
  /** A finished turn of `agent` handled its inbox up to entry `through`. */
  | { type: 'ack'; agent: string; through: number }
  | { type: 'proposal_opened'; proposal: ProposalSpec }
  | { type: 'vote'; proposal: string; voter: string; option: string; reason: string }
  | {
      type: 'proposal_closed';
      proposal: string;
      status: 'decided' | 'no_decision' | 'cancelled';
      winner: string | null;
      reason: string | null;
    }
  /** A turn of `agent` ended; proposal deadlines count these. */
  | { type: 'turn_counted'; agent: string }
  /** `agent`, an instance of `template`, joined, reporting to `parent`, `depth` levels below a declared agent. */
  | { type: 'agent_spawned'; agent: string; template: string; role: 'manager' | 'worker'; parent: string; depth: number };
