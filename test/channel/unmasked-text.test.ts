import { describe, expect, it } from 'vitest';
import { unmaskedText } from '../../src/channel/merge.js';

const mask = (text: string) => text.split('hunter22').join('***');

describe("a resumed run's document text, restored from the masked recording", () => {
  const real = 'user: admin\npassword: hunter22\nhost: db\n';
  const recorded = mask(real);

  it('takes the real form of the lines nobody changed, and the agents lines as they are', () => {
    const final = 'user: root\npassword: ***\nhost: db\nport: 5432\n';
    expect(unmaskedText(real, recorded, final, mask)).toEqual({ text: 'user: root\npassword: hunter22\nhost: db\nport: 5432\n' });
  });

  it('a text without the mask is itself', () => {
    expect(unmaskedText(undefined, 'x', 'plain', mask)).toEqual({ text: 'plain' });
  });

  it('cannot restore a mask an agent wrote, a first text that changed or is gone, or a secret across lines', () => {
    expect(unmaskedText(real, recorded, 'password: ***\nnew: ***\n', mask)).toHaveProperty('lost', expect.stringContaining("an agent's change holds a secret"));
    expect(unmaskedText('other', recorded, recorded, mask)).toHaveProperty('lost', expect.stringContaining('no longer what the run began with'));
    expect(unmaskedText(undefined, recorded, recorded, mask)).toHaveProperty('lost');
    const across = (t: string) => t.split('a\nb').join('***');
    expect(unmaskedText('xa\nby', across('xa\nby'), 'x***y', across)).toHaveProperty('lost', expect.stringContaining('spans lines'));
  });
});
