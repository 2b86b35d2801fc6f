import { describe, expect, it } from 'vitest';
import { findMentions } from '../../src/channel/mentions.js';

describe('mentions at their edges', () => {
  it('a name that ends in - or _ is matched whole; trailing - and _ after another name are punctuation', () => {
    const agents = new Set(['qa_', 'lead', 'a-b']);
    expect(findMentions('ask @qa_ now', agents).known).toEqual([{ name: 'qa_', start: 4, end: 8 }]);
    expect(findMentions('ask @lead-- now', agents).known).toEqual([{ name: 'lead', start: 4, end: 9 }]);
    expect(findMentions('ask @lead_-_ now', agents).known).toEqual([{ name: 'lead', start: 4, end: 9 }]);
    expect(findMentions('@a-b', agents).known).toEqual([{ name: 'a-b', start: 0, end: 4 }]);
    expect(findMentions('@all_ go', agents)).toMatchObject({ all: true, known: [] });
    expect(findMentions('@all go', new Set(['all'])).all).toBe(true);
  });

  it('an unknown name is reported whole, with where it ends', () => {
    const scan = findMentions('hi @someone__ and @x', new Set(['lead']));
    expect(scan.unknown).toEqual([
      { name: 'someone__', start: 3, end: 13 },
      { name: 'x', start: 18, end: 20 },
    ]);
  });
});
