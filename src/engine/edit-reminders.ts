import type { Channel } from '../channel/channel.js';

/**
 * When nothing else runs and edits of documents still wait for their owner (docs/workflow.md:
 * documents): each owner who can still take a turn is reminded once of each such edit. An edit
 * the owner leaves after that stays open, and the run ends with it open (`open_edits`), as a
 * vote never cast ends a proposal. Returns whether anyone was reminded.
 */
export class EditReminders {
  private readonly reminded = new Set<string>();

  constructor(private readonly channel: Channel) {}

  settle(canTakeTurn: (agent: string) => boolean): boolean {
    const byOwner = new Map<string, { id: string; document: string; author: string }[]>();
    for (const edit of this.channel.documents.openEdits()) {
      if (this.reminded.has(edit.id) || !canTakeTurn(edit.owner)) continue;
      this.reminded.add(edit.id);
      byOwner.set(edit.owner, [...(byOwner.get(edit.owner) ?? []), edit]);
    }
    for (const [owner, edits] of byOwner) {
      const list = edits.map((e) => `${e.id} of "${e.document}" from @${e.author}`).join(', ');
      this.channel.postSystem(
        `${edits.length === 1 ? 'Edit' : 'Edits'} ${list} still ${edits.length === 1 ? 'waits' : 'wait'} for your review: accept or reject ` +
          `${edits.length === 1 ? 'it' : 'each'} with review_edit (read_document shows the edits that wait).`,
        [owner],
      );
    }
    return byOwner.size > 0;
  }
}
