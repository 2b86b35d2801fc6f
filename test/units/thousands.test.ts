import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { thousands } from '../../src/thousands.js';

describe('thousands', () => {
  it('writes an integer as toLocaleString("en-US") does', () => {
    const edges = [0, -0, 1, -1, 12, 999, 1000, -1000, 12_345, 123_456, 1_234_567, 2 ** 31, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
    let seed = 7;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    const drawn = Array.from({ length: 5000 }, () => Math.round((random() - 0.5) * 10 ** Math.floor(random() * 16)));
    for (const n of [...edges, ...drawn]) expect(thousands(n)).toBe(n.toLocaleString('en-US'));
  });

  it('writes a safe integer without toLocaleString, whose first call loads ICU', () => {
    const locale = vi.spyOn(Number.prototype, 'toLocaleString');
    try {
      expect([thousands(0), thousands(-12_345), thousands(Number.MAX_SAFE_INTEGER)]).toEqual(['0', '-12,345', '9,007,199,254,740,991']);
      expect(locale).not.toHaveBeenCalled();
    } finally {
      locale.mockRestore();
    }
  });

  it('leaves what is not a safe integer to toLocaleString', () => {
    for (const n of [0.5, -1234.5678, 1e21, 2 ** 60, Number.NaN, Number.POSITIVE_INFINITY]) expect(thousands(n)).toBe(n.toLocaleString('en-US'));
  });

  it('is the only way src/ formats a number by locale (ICU costs a run 20-30 ms at its start)', () => {
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const users = sources('src').filter((file) => !file.endsWith('thousands.ts') && /\.toLocaleString\(|\bIntl\./.test(readFileSync(file, 'utf8')));
    expect(users).toEqual([]);
  });
});
