import { describe, expect, it } from 'vitest';
import { InDoubtBatches } from '../../src/engine/batches/batch-in-doubt.js';
import type { BatchApi } from '../../src/provider/batch-api.js';

/**
 * A batch a stopped process was creating, looked for before its calls are sent again
 * (engine/batches/batch-in-doubt.ts): only an ended batch whose requests are exactly the group's is
 * taken, once, noted as submitted; anything else the API says, or fails to, leaves the calls to be sent.
 */
type Listed = { id?: unknown; processing_status?: unknown; request_counts?: unknown } | unknown;

function api(listed: Listed[], results: Record<string, string[]>, fail?: 'list' | 'results') {
  const asked: string[] = [];
  const fake: BatchApi = {
    create: async () => ({ id: 'x' }),
    retrieve: async (id) => ({ id, processing_status: 'ended', created_at: '' }),
    cancel: async () => ({}),
    list: () =>
      (async function* () {
        asked.push('list');
        if (fail === 'list') throw new Error('no list');
        yield* listed;
      })(),
    results: async (id) => {
      asked.push(`results ${id}`);
      if (fail === 'results') throw new Error('no results');
      return (async function* () {
        yield* (results[id] ?? []).map((custom_id) => ({ custom_id, result: { type: 'succeeded' } }));
        yield 'not a line';
      })();
    },
  };
  return { fake, asked };
}

const ended = (id: string, n: number) => ({
  id,
  processing_status: 'ended',
  request_counts: { processing: 0, succeeded: n, errored: 0, canceled: 0, expired: 0 },
});

describe('a batch in doubt', () => {
  it('takes the ended batch whose requests are exactly the group, notes it once, and asks once for the group', async () => {
    const { fake, asked } = api([ended('b3', 2), { id: 'b2', processing_status: 'in_progress', request_counts: { processing: 2 } }, ended('b1', 2)], {
      b3: ['r1', 'other'],
      b1: ['r2', 'r1'],
    });
    const notes: unknown[] = [];
    const doubt = new InDoubtBatches(fake, (e) => notes.push(e));
    expect(await doubt.find(['r1', 'r2'])).toBe('b1');
    expect(await doubt.find(['r1', 'r2'])).toBe('b1');
    expect(notes).toEqual([{ type: 'batch_submitted', batch_id: 'b1', custom_ids: ['r1', 'r2'] }]);
    // The one in progress cannot show its requests: its results are never asked for.
    expect(asked).toEqual(['list', 'results b3', 'results b1']);
  });

  it('passes over what is not an ended batch of that size (another count, no id, hostile items, counts that are not numbers) to the one that is', async () => {
    const { fake, asked } = api(
      [
        { processing_status: 'ended', request_counts: { succeeded: 1 } },
        ended('b1', 3),
        { id: 'b2', processing_status: 'ended', request_counts: { succeeded: '1' } },
        { id: 'b3', processing_status: 'ended', request_counts: null },
        { id: 'b4', processing_status: 'ended', request_counts: { succeeded: 0.5, errored: 0.5 } },
        { id: 'b5', processing_status: 'ended', request_counts: { succeeded: -1, errored: 2 } },
        null,
        'b0',
        ended('good', 1),
      ],
      { b1: ['r1', 'r2', 'r3'], b2: ['r1'], b3: ['r1'], b4: ['r1'], b5: ['r1'], good: ['r1'] },
    );
    const notes: unknown[] = [];
    expect(await new InDoubtBatches(fake, (e) => notes.push(e)).find(['r1'])).toBe('good');
    expect(notes).toHaveLength(1);
    expect(asked).toEqual(['list', 'results good']);
  });

  it("a results file's lines are read with care: no custom_id, or one that is not a string, is no request; more lines than the count is another batch", async () => {
    const { fake } = api([ended('extra', 1), ended('good', 1)], { extra: ['r1', 'r9'], good: ['r1'] });
    const base = fake.results;
    fake.results = async (id) => {
      const more = id === 'good' ? [null, { custom_id: 5 }, { result: {} }] : [];
      const given = await base(id);
      return (async function* () {
        yield* more;
        yield* given;
      })();
    };
    expect(await new InDoubtBatches(fake, () => {}).find(['r1'])).toBe('good');
  });

  it('each group is its own: groups whose ids join alike are not taken for each other', async () => {
    const { fake } = api([ended('b1', 2)], { b1: ['ab', 'c'] });
    const doubt = new InDoubtBatches(fake, () => {});
    expect(await doubt.find(['ab', 'c'])).toBe('b1');
    expect(await doubt.find(['a', 'bc'])).toBeUndefined();
  });

  it('a batch of the same size holding other requests, or a subset of them, is not the group', async () => {
    const { fake } = api([ended('b1', 2), ended('b2', 2), ended('b3', 2)], { b1: ['r1', 'r1'], b2: ['r1', 'r3'], b3: ['r1', 'r2', 'r3'] });
    expect(await new InDoubtBatches(fake, () => {}).find(['r1', 'r2'])).toBeUndefined();
  });

  it('looks at the 100 newest batches only', async () => {
    const listed = [...Array.from({ length: 100 }, (_, i) => ({ id: `n${i}`, processing_status: 'in_progress' })), ended('old', 1)];
    const { fake, asked } = api(listed, { old: ['r1'] });
    expect(await new InDoubtBatches(fake, () => {}).find(['r1'])).toBeUndefined();
    expect(asked).toEqual(['list']);
    const { fake: near } = api([...listed.slice(1)], { old: ['r1'] });
    expect(await new InDoubtBatches(near, () => {}).find(['r1'])).toBe('old');
  });

  it('an API that does not list, or gives no results, leaves the calls to be sent again', async () => {
    for (const fail of ['list', 'results'] as const) {
      const { fake } = api([ended('b1', 1)], { b1: ['r1'] }, fail);
      const notes: unknown[] = [];
      expect(await new InDoubtBatches(fake, (e) => notes.push(e)).find(['r1']), fail).toBeUndefined();
      expect(notes).toEqual([]);
    }
  });
});
