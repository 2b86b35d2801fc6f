import { detached } from '../../detached.js';
/** A batched call as the warm-first holding sees it. */
export interface HeldCall {
  signal: AbortSignal;
  /** Settled when the call has its answer, fails, or is given up. */
  settled: Promise<void>;
}

/**
 * Warm first, for batches (docs/workflow.md: the shared context in batches): the requests of one
 * batch are processed together, and read only what the prompt cache held before it. So of the
 * calls that share a prefix nobody wrote, one goes (it writes the prefix), and the others are held
 * until it is answered; they then go, and read it, at the batch's price too. A call that fails or
 * is given up lets those it held go, and one of them writes the prefix instead.
 */
export class PrefixWriters<C extends HeldCall> {
  /** The call writing each cold prefix (by the warming's key), until it settles. */
  private readonly writers = new Map<object, Promise<void>>();
  private readonly held = new Set<C>();

  /** `release` hands a held call back to be sent, once the call writing its prefix has settled. */
  constructor(private readonly release: (call: C) => void) {}

  /** Whether `call` may go now (it writes `prefix`, or shares none); false: it is held. */
  admit(call: C, prefix: object | undefined): boolean {
    const writer = prefix ? this.writers.get(prefix) : undefined;
    if (writer === undefined) {
      if (prefix) this.writes(prefix, call);
      return true;
    }
    this.held.add(call);
    // The writer failed or was given up as well as answered: the calls it held go on either way.
    const release = () => {
      this.held.delete(call);
      if (!call.signal.aborted) this.release(call);
    };
    detached(writer.then(release), release);
    return false;
  }

  /** `call` writes `prefix` (a resumed call whose batch is recorded, when nobody writes it yet). */
  writes(prefix: object, call: C): void {
    if (this.writers.has(prefix)) return;
    this.writers.set(prefix, call.settled);
    const forget = () => {
      if (this.writers.get(prefix) === call.settled) this.writers.delete(prefix);
    };
    detached(call.settled.then(forget), forget);
  }

  /** The calls held now that still want an answer. */
  get waiting(): C[] {
    return [...this.held].filter((c) => !c.signal.aborted);
  }
}
