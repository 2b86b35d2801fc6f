import type { Message } from './message.js';
import type { DocumentSpec, EditSpec } from './document.js';
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
  | { type: 'agent_spawned'; agent: string; template: string; role: 'manager' | 'worker'; parent: string; depth: number }
  /** A document with an owner, at version 1 (docs/workflow.md: documents). */
  | { type: 'document_opened'; document: DocumentSpec }
  /** `document` is now at `version` with `text`: its owner's edit, or edit `edit` the owner accepted (`author` its author). */
  | { type: 'document_changed'; document: string; version: number; author: string; text: string; why: string; edit: string | null }
  /** `author` added an entry to an append document, which is now at `version`. */
  | { type: 'document_appended'; document: string; version: number; author: string; text: string }
  /** An edit by an agent that does not own the document, waiting for the owner's review. */
  | { type: 'edit_proposed'; edit: EditSpec }
  /** The owner reviewed an edit; a `conflict` is an accepted edit that overlapped later changes, and did not land. */
  | { type: 'edit_closed'; edit: string; status: 'accepted' | 'rejected' | 'conflict'; reviewer: string; why: string };
