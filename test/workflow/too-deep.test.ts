import { describe, expect, it } from 'vitest';
import { MAX_PARSED_DEPTH, tooDeepAt } from '../../src/workflow/source.js';

describe('block nesting counted before the YAML parser recurses', () => {
  const deep = (n: number, line: (i: number) => string) => Array.from({ length: n }, (_, i) => line(i)).join('\n');

  it('finds the shapes that nest a level a line, or many on one line, past the limit', () => {
    for (const text of [
      deep(2300, (i) => `${'  '.repeat(i)}a:`),
      deep(2300, (i) => `${' '.repeat(i)}a:`),
      deep(2300, (i) => `${'  '.repeat(i)}- `),
      deep(2300, (i) => `${'  '.repeat(2 * i)}- a:`),
      `x:\n  ${'- '.repeat(2300)}a`,
    ])
      expect(tooDeepAt(text)).toBeGreaterThan(0);
  });

  it('says where: the first line past the limit', () => {
    const text = deep(20, (i) => `${'  '.repeat(i)}a:`);
    expect(tooDeepAt(text, 10)).toBe(text.split('\n').slice(0, 10).join('\n').length + 1 + 20);
    expect(tooDeepAt(text, 20)).toBeUndefined();
  });

  it('leaves ordinary workflows alone: blank lines, comments, block scalars and siblings do not add up', () => {
    const workflow = [
      'name: w',
      'agents:',
      '  lead:',
      '    role: manager',
      '    system: |',
      ...Array.from({ length: 40 }, (_, i) => `${'      '}${' '.repeat(i)}code line ${i}`),
      '',
      '    # a comment',
      ...Array.from({ length: 5000 }, (_, i) => `  worker-${i}: { role: worker }`),
      'kickoff: hi',
    ].join('\n');
    expect(tooDeepAt(workflow)).toBeUndefined();
    expect(MAX_PARSED_DEPTH).toBeGreaterThan(900);
  });
});
