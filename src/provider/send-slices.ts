/** How many calls may start in one turn of the event loop before the rest wait for the next. */
export const CALLS_PER_SLICE = 8;

/**
 * Lets a burst of calls (a wide spawn starting hundreds of agents at once) leave in slices of
 * `perSlice`, with a turn of the event loop between two slices (docs/BENCHMARKS.md: a wide spawn).
 * Without it every request of the burst was built before the first could connect: the first
 * was on the wire only when the last was ready, and all the answers came back together. With
 * it, the first slice's requests are sent while the next slices are built, and their answers
 * are taken in while the last ones are out. A call alone, or the few of a small team, waits
 * for nothing.
 */
export class SendSlices {
  private started = 0;
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly perSlice = CALLS_PER_SLICE) {}

  /** Resolves when the caller may start its call: at once while this slice has room. */
  enter(): Promise<void> | undefined {
    this.scheduleNextSlice();
    if (this.waiting.length === 0 && this.started < this.perSlice) {
      this.started++;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private scheduleNextSlice(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // An immediate queued here runs after the event loop has polled for I/O: what this slice
    // started connects and is written before the next slice is built.
    setImmediate(() => {
      this.scheduled = false;
      const slice = this.waiting.splice(0, this.perSlice);
      this.started = slice.length;
      for (const resolve of slice) resolve();
      if (this.waiting.length > 0 || this.started > 0) this.scheduleNextSlice();
    });
  }
}
