/**
 * One agent's inbox: the ids of the messages addressed to it, in order, and a read cursor.
 * Reading the unread part costs in proportion to what is unread, never to the channel.
 */
export class Inbox {
  private readonly ids: number[] = [];
  /** How many of `ids` a finished turn has handled. */
  private handled = 0;

  push(id: number): void {
    this.ids.push(id);
  }

  get size(): number {
    return this.ids.length;
  }

  get acknowledged(): number {
    return this.handled;
  }

  get unreadCount(): number {
    return this.ids.length - this.handled;
  }

  unread(): number[] {
    return this.ids.slice(this.handled);
  }

  /** The ids of entries `from` (inclusive) to `to` (exclusive). */
  entries(from: number, to = this.ids.length): number[] {
    return this.ids.slice(from, to);
  }

  /** Marks the first `through` entries handled; a cursor never moves back. */
  acknowledge(through: number): void {
    if (through < this.handled || through > this.ids.length) {
      throw new Error(`cannot acknowledge through ${through}: handled ${this.handled} of ${this.ids.length}`);
    }
    this.handled = through;
  }

  toJSON(): { ids: number[]; handled: number } {
    return { ids: [...this.ids], handled: this.handled };
  }
}
