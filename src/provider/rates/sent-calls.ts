import type { RateDimension } from './rate-headers.js';
import type { CallNeed } from './rate-types.js';

interface Sent {
  need: CallNeed;
  answered: boolean;
  at: number;
}

/**
 * The calls this process let through, by sequence number, while a response may still report on
 * them (rate-gate.ts). They are kept in the order they went, so each question stops where its
 * answer ends: a fan-out of 256 calls answered in order costs each response a few steps, not a
 * walk of all 256 (which made the pacer's share of a wide spawn grow with its square).
 */
export class SentCalls {
  private readonly calls = new Map<number, Sent>();

  /** `seq` is above every call added before it. */
  add(seq: number, need: CallNeed, at: number): void {
    this.calls.set(seq, { need, answered: false, at });
  }

  get(seq: number): Sent | undefined {
    return this.calls.get(seq);
  }

  /** The points of dimension `d` of the calls sent before `seq` and not yet answered. */
  unansweredBefore(seq: number, d: RateDimension): number {
    let points = 0;
    for (const [sent, call] of this.calls) {
      if (sent >= seq) break;
      if (!call.answered) points += call.need[d];
    }
    return points;
  }

  /** The calls sent after `after` and before `until`, when each went and its points of `d`. */
  since(d: RateDimension, after: number, until = Number.POSITIVE_INFINITY): { at: number; points: number }[] {
    const found: { at: number; points: number }[] = [];
    for (const [seq, call] of this.calls) {
      if (seq >= until) break;
      if (seq > after) found.push({ at: call.at, points: call.need[d] });
    }
    return found;
  }

  /**
   * Forgets the answered calls no response can report on any more: those at or before `kept`
   * (the oldest word a later reading is compared with) and before the oldest call still
   * unanswered, which may bring an older word yet.
   */
  forgetAnswered(kept: number): void {
    let oldest = kept;
    for (const [seq, call] of this.calls) {
      if (!call.answered) {
        oldest = Math.min(oldest, seq - 1);
        break;
      }
    }
    for (const [seq, call] of this.calls) {
      if (seq > oldest) break;
      if (call.answered) this.calls.delete(seq);
    }
  }
}
