import { describe, expect, it } from 'vitest';
import type { Finding } from '../../src/session/findings.js';
import { FindingIndex } from '../../src/session/graders/finding-index.js';

const finding = (agent: string, path: string, line: number, end_line = line): Finding => ({
  agent,
  path,
  line,
  end_line,
  level: 'warning',
  title: null,
  message: 'm',
});

describe('FindingIndex: the findings so far, looked up by line', () => {
  it('overlap at the edges, narrow and wide alike; another file never', () => {
    const index = new FindingIndex();
    const wide = finding('a', 'x.js', 10, 600);
    const narrow = finding('b', 'y.js', 900);
    index.add(wide);
    index.add(narrow);
    expect(index.overlapping(finding('c', 'x.js', 600))).toBe(wide);
    expect(index.overlapping(finding('c', 'x.js', 1, 10))).toBe(wide);
    expect(index.overlapping(finding('c', 'x.js', 601))).toBeUndefined();
    expect(index.overlapping(finding('c', 'x.js', 1, 9))).toBeUndefined();
    expect(index.overlapping(finding('c', 'y.js', 1, 900))).toBe(narrow);
    expect(index.overlapping(finding('c', 'y.js', 900, 2000))).toBe(narrow);
    expect(index.overlapping(finding('c', 'y.js', 1, 899))).toBeUndefined();
    expect(index.overlapping(finding('c', 'y.js', 901, 5000))).toBeUndefined();
    expect(index.overlapping(finding('c', 'z.js', 1, 5000))).toBeUndefined();
  });

  it('of several that overlap, the first recorded that `which` accepts', () => {
    const index = new FindingIndex();
    const first = finding('a', 'x.js', 5);
    const second = finding('b', 'x.js', 5);
    const third = finding('c', 'x.js', 4, 6);
    const widest = finding('d', 'x.js', 1, 1000);
    for (const f of [first, second, third, widest]) index.add(f);
    expect(index.overlapping(finding('e', 'x.js', 5))).toBe(first);
    expect(index.overlapping(finding('e', 'x.js', 5), (f) => f.agent !== 'a')).toBe(second);
    expect(index.overlapping(finding('e', 'x.js', 6), (f) => f.agent !== 'c')).toBe(widest);
    expect(index.overlapping(finding('e', 'x.js', 2, 900), (f) => f.agent === 'c')).toBe(third);
    expect(index.overlapping(finding('e', 'x.js', 3), (f) => f.agent === 'nobody')).toBeUndefined();
    // A wide finding recorded first is named before narrow ones recorded later.
    const later = new FindingIndex();
    later.add(widest);
    later.add(first);
    expect(later.overlapping(finding('e', 'x.js', 5))).toBe(widest);
  });
});
