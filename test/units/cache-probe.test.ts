import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCache } from '../../src/session/cache.js';

/**
 * The response cache is proved before a run by a write read back (session/cache.ts). Runs that
 * start together open one cache at once: each must read back its own probe, not another's.
 */
describe('the response cache probe', () => {
  it('runs that open one cache together each pass its probe', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-probe-'));
    for (let round = 0; round < 5; round++) {
      const opened = await Promise.allSettled(Array.from({ length: 8 }, () => openCache('cache.sqlite', { cwd: dir })));
      const refused = opened.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
      expect(refused, `round ${round}`).toEqual([]);
      await Promise.all(opened.map((o) => (o.status === 'fulfilled' ? o.value.close() : undefined)));
    }
  });
});
