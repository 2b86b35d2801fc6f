import { describe, expect, it } from 'vitest';
import { SentCalls } from '../../src/provider/rates/sent-calls.js';

const need = (requests: number, input_tokens = 0, output_tokens = 0) => ({ requests, input_tokens, output_tokens });

/** Calls 1…5 sent at 100, 200, … with 1, 2, 4, 8, 16 requests' points and ten times as many input tokens. */
function five(answered: number[] = []): SentCalls {
  const sent = new SentCalls();
  for (let seq = 1; seq <= 5; seq++) sent.add(seq, need(2 ** (seq - 1), 10 * 2 ** (seq - 1)), seq * 100);
  for (const seq of answered) sent.get(seq)!.answered = true;
  return sent;
}

const seqs = (sent: SentCalls) => [1, 2, 3, 4, 5].filter((seq) => sent.get(seq) !== undefined);

describe('the calls a gate let through', () => {
  it('counts the unanswered calls sent before one, of one dimension, and none from that call on', () => {
    const sent = five([2]);
    expect(sent.unansweredBefore(1, 'requests')).toBe(0);
    expect(sent.unansweredBefore(3, 'requests')).toBe(1); // call 1; call 2 is answered, call 3 is the one asked about
    expect(sent.unansweredBefore(5, 'requests')).toBe(1 + 4 + 8);
    expect(sent.unansweredBefore(5, 'input_tokens')).toBe(10 + 40 + 80);
    expect(sent.unansweredBefore(6, 'requests')).toBe(1 + 4 + 8 + 16);
  });

  it('lists the calls sent after one and before another, with when each went', () => {
    const sent = five();
    expect(sent.since('requests', 2)).toEqual([
      { at: 300, points: 4 },
      { at: 400, points: 8 },
      { at: 500, points: 16 },
    ]);
    expect(sent.since('input_tokens', 1, 4)).toEqual([
      { at: 200, points: 20 },
      { at: 300, points: 40 },
    ]);
    expect(sent.since('requests', 0, 1)).toEqual([]);
    expect(sent.since('requests', 5)).toEqual([]);
  });

  it('forgets answered calls up to the word kept and before the oldest unanswered call, and no other', () => {
    const answered = five([1, 2, 4, 5]);
    answered.forgetAnswered(Number.POSITIVE_INFINITY);
    expect(seqs(answered), 'call 3 is unanswered: 4 and 5 may be reported on with an older word').toEqual([3, 4, 5]);

    const kept = five([1, 2, 3, 4, 5]);
    kept.forgetAnswered(2);
    expect(seqs(kept), 'a later reading is compared with word 2: the calls after it stay').toEqual([3, 4, 5]);

    const first = five([2, 3]);
    first.forgetAnswered(Number.POSITIVE_INFINITY);
    expect(seqs(first), 'call 1 is unanswered: nothing before it, so nothing goes').toEqual([1, 2, 3, 4, 5]);

    const all = five([1, 2, 3, 4, 5]);
    all.forgetAnswered(Number.POSITIVE_INFINITY);
    expect(seqs(all)).toEqual([]);
  });
});
