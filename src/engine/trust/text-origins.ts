import type { ChannelEvent } from '../../channel/channel-events.js';
import type { Shown } from '../../agents/tools/tool.js';

/** Why a text holds a stranger's words, and the proposal it belongs to when it is a proposal's. */
export interface Origin {
  why: string;
  proposal?: string;
}

/**
 * Which texts the run keeps hold words from outside the team (docs/security.md: how taint
 * travels): channel messages by id, documents (a version, an entry or an open edit written by a
 * tainted agent, or a first text that holds an untrusted value), and proposals (opened by a
 * tainted agent, or with a tainted voter's reason). A system notice holds the text of the event
 * the channel posted it for (an edit's diff, a proposal's question), so it is the event's origin
 * that it carries. Built from the channel's events as they happen, so a resume rebuilds it.
 */
export class TextOrigins {
  private readonly messages = new Map<number, Origin>();
  private readonly documents = new Map<string, Origin>();
  private readonly proposals = new Map<string, Origin>();
  /** The origin of the event just before: a system notice that follows it at once carries its text. */
  private pending: Origin | undefined;

  constructor(
    /** Whether an agent had read a stranger's words when it wrote. */
    private readonly tainted: (agent: string) => boolean,
  ) {}

  /** A document holds untrusted text from its start (its first text, or a stranger's file). */
  documentHolds(name: string, why: string): void {
    if (!this.documents.has(name)) this.documents.set(name, { why });
  }

  /** A channel event as it happens; for a message, the origin of its text when it holds a stranger's words. */
  noticed(event: ChannelEvent, kickoff: string | undefined): Origin | undefined {
    const before = this.pending;
    this.pending = undefined;
    switch (event.type) {
      case 'message': {
        const m = event.message;
        const origin =
          m.kind === 'agent'
            ? this.tainted(m.sender)
              ? { why: `a message from @${m.sender}, who read untrusted text` }
              : undefined
            : m.kind === 'kickoff'
              ? kickoff === undefined
                ? undefined
                : { why: kickoff }
              : before;
        if (origin) this.messages.set(m.id, origin);
        return origin;
      }
      case 'proposal_opened': {
        const { id, proposer } = event.proposal;
        if (this.tainted(proposer)) this.proposals.set(id, { why: `proposal "${id}" of @${proposer}, who read untrusted text`, proposal: id });
        this.pending = this.proposals.get(id);
        return undefined;
      }
      case 'vote':
        // A reason is shown to whoever reads the proposal next (the vote tool answers with every vote).
        if (event.reason !== '' && this.tainted(event.voter) && !this.proposals.has(event.proposal))
          this.proposals.set(event.proposal, {
            why: `proposal "${event.proposal}", voted on by @${event.voter}, who read untrusted text`,
            proposal: event.proposal,
          });
        return undefined;
      case 'proposal_closed':
        this.pending = this.proposals.get(event.proposal);
        return undefined;
      case 'document_changed':
      case 'document_appended':
        this.wrote(event.document, event.author);
        return undefined;
      case 'edit_proposed':
        // Its text and why are shown to the owner, and to every reader of the document while it is open.
        this.wrote(event.edit.document, event.edit.author);
        return undefined;
      case 'edit_closed':
        this.pending = this.documents.get(event.edit.slice(0, event.edit.lastIndexOf('#')));
        return undefined;
      default:
        return undefined;
    }
  }

  /** What a tool showed an agent, when any of it holds a stranger's words. */
  of(shown: Shown): Origin | undefined {
    if ('messages' in shown) {
      for (const id of shown.messages) {
        const origin = this.messages.get(id);
        if (origin) return { ...origin, why: `message #${id} of the channel's history, ${origin.why}` };
      }
      return undefined;
    }
    return 'document' in shown ? this.documents.get(shown.document) : this.proposals.get(shown.proposal);
  }

  private wrote(document: string, author: string): void {
    if (this.tainted(author)) this.documentHolds(document, `document "${document}", written by @${author}, who read untrusted text`);
    this.pending = this.documents.get(document);
  }
}
