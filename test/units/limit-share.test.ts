import { describe, expect, it } from 'vitest';
import { type LimitSize, limitStep } from '../../src/provider/rates/limit-share.js';

/**
 * The one step every keeper runs (memory, PostgreSQL; Redis the same as a script), on records a
 * keeper could hold: early notes, a window's log, a bucket's level, and records that make no sense.
 * The property test of pacer.test.ts checks the limits hold over many random takes; these check
 * each part of a record exactly.
 */
const NOW = 1_000_000;
const BUCKET: LimitSize = { points: 10, ms: 10_000, window: false };
const WINDOW: LimitSize = { points: 5, ms: 5_000, window: true };

describe('limitStep', () => {
  it('notes what went before the size was known, when it went (within the last minute), keeping the rest of the record', () => {
    expect(limitStep(undefined, BUCKET, 'early', 2.5, NOW, 500).state).toEqual({ early: [[NOW - 500, 3]] });
    // Never ahead of now, never more than a minute back.
    expect(limitStep(null, BUCKET, 'early', 1, NOW, -5).state).toEqual({ early: [[NOW, 1]] });
    expect(limitStep('not a record', BUCKET, 'early', 1, NOW, 120_000).state).toEqual({ early: [[NOW - 60_000, 1]] });
    // A bucket's level stays; notes older than a minute, or ahead of this clock, go.
    const state = {
      tokens: 4,
      at: NOW - 100,
      early: [
        [NOW - 61_000, 1],
        [NOW - 30_000, 2],
        [NOW + 5, 7],
      ],
    };
    expect(limitStep(state, BUCKET, 'early', 1, NOW, 0).state).toEqual({
      tokens: 4,
      at: NOW - 100,
      early: [
        [NOW - 30_000, 2],
        [NOW, 1],
      ],
    });
  });

  it('a bucket owes the early notes of its own length, and no older ones; a note at exactly its length ago is owed no more', () => {
    const state = {
      early: [
        [NOW - 2_000, 4],
        [NOW - 10_000, 5],
        [NOW - 20_000, 5],
      ],
    };
    // A full bucket of 10, less the 4 noted 2 s ago: 6 left, so 7 waits for one point (1 s).
    expect(limitStep(state, BUCKET, 'take', 7, NOW)).toEqual({ state: { tokens: 6, at: NOW }, waitMs: 1_000 });
    expect(limitStep(state, BUCKET, 'take', 6, NOW)).toEqual({ state: { tokens: 0, at: NOW }, waitMs: 0 });
  });

  it("a bucket's record that makes no sense is a full bucket; one from a clock ahead refills from now, and below empty is empty", () => {
    for (const record of [
      { tokens: '3', at: NOW },
      { tokens: 3, at: 'then' },
      { tokens: Number.NaN, at: NOW },
      { tokens: 3, at: Number.POSITIVE_INFINITY },
    ]) {
      expect(limitStep(record, BUCKET, 'take', 10, NOW), JSON.stringify(record)).toEqual({ state: { tokens: 0, at: NOW }, waitMs: 0 });
    }
    expect(limitStep({ tokens: 2, at: NOW + 50_000 }, BUCKET, 'take', 3, NOW).waitMs).toBe(1_000);
    expect(limitStep({ tokens: -40, at: NOW }, BUCKET, 'take', 1, NOW).waitMs).toBe(1_000);
  });

  it('a window counts its log in order of time, only what went within its length and not ahead of now', () => {
    // 5 in the window: one more waits for the oldest (3 s ago) to leave, in 2 s.
    const unordered = {
      log: [
        [NOW - 1_000, 2],
        [NOW - 3_000, 3],
      ],
    };
    expect(limitStep(unordered, WINDOW, 'take', 1, NOW)).toEqual({
      state: {
        log: [
          [NOW - 3_000, 3],
          [NOW - 1_000, 2],
        ],
        ms: 5_000,
      },
      waitMs: 2_000,
    });
    // What left the window, and what is ahead of this clock, is not counted.
    const aged = {
      log: [
        [NOW - 6_000, 5],
        [NOW + 1_000, 5],
      ],
    };
    expect(limitStep(aged, WINDOW, 'take', 5, NOW)).toEqual({ state: { log: [[NOW, 5]], ms: 5_000 }, waitMs: 0 });
  });

  it("a window's entries that make no sense are dropped: not pairs, not numbers, or of no points", () => {
    const state = {
      log: [
        [NOW - 1_000, 0],
        [NOW - 1_000, 2, 9],
        ['then', 2],
        [NOW - 1_000, Number.NaN],
        [NOW - 2_000, 1],
      ],
    };
    expect(limitStep(state, WINDOW, 'take', 1, NOW).state).toEqual({
      log: [
        [NOW - 2_000, 1],
        [NOW, 1],
      ],
      ms: 5_000,
    });
    expect(limitStep({ log: 'not a log' }, WINDOW, 'take', 1, NOW).state).toEqual({ log: [[NOW, 1]], ms: 5_000 });
  });

  it('a window gives back from what went last, and a log given back whole keeps no length', () => {
    const state = {
      log: [
        [NOW - 3_000, 2],
        [NOW - 1_000, 3],
      ],
    };
    expect(limitStep(state, WINDOW, 'give', 4, NOW)).toEqual({ state: { log: [[NOW - 3_000, 1]], ms: 5_000 }, waitMs: 0 });
    expect(limitStep(state, WINDOW, 'give', 9, NOW)).toEqual({ state: { log: [] }, waitMs: 0 });
  });

  it('the longest window any runner asked with holds, up to a minute; a length that makes no sense is not kept', () => {
    const entry = [[NOW - 6_000, 5]];
    // Kept at 8 s, the point 6 s ago still counts: 1 more waits 2 s.
    expect(limitStep({ log: entry, ms: 8_000 }, WINDOW, 'take', 1, NOW).waitMs).toBe(2_000);
    expect(limitStep({ log: entry, ms: 60_000 }, WINDOW, 'take', 1, NOW).waitMs).toBe(54_000);
    for (const ms of [60_001, 0, -8_000, '8000']) {
      expect(limitStep({ log: entry, ms }, WINDOW, 'take', 1, NOW), String(ms)).toEqual({ state: { log: [[NOW, 1]], ms: 5_000 }, waitMs: 0 });
    }
  });
});
