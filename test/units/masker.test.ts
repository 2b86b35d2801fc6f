import { describe, expect, it } from 'vitest';
import { Masker, MIN_SECRET_LENGTH } from '../../src/session/masker.js';

const SECRET = 'p@ss"w0rd-42/x';
const masker = () => new Masker([SECRET, 'short', 'line one secret\nline two secret']);
const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('the masker', () => {
  it('masks the raw value, its JSON-escaped and URL-encoded forms, everywhere in a text', () => {
    const m = masker();
    expect(m.text(`raw ${SECRET} end ${SECRET}`)).toBe('raw *** end ***');
    expect(m.text(JSON.stringify(SECRET))).toBe('"***"');
    expect(m.text(encodeURIComponent(SECRET))).toBe('***');
    expect(m.text('nothing secret')).toBe('nothing secret');
    expect(m.text('short and shorter')).toBe('*** and ***er');
  });

  it('masks the base64 forms at each of the three byte alignments, with and without padding', () => {
    const m = new Masker(['abcdefgh-secret']);
    for (const prefix of ['', 'x', 'xy', 'xyz', 'wxyz']) {
      for (const suffix of ['', 'q', 'qr']) {
        const encoded = b64(`${prefix}abcdefgh-secret${suffix}`);
        const masked = m.text(encoded);
        expect(masked, `${prefix}…${suffix}`).toContain('***');
        // What is left is at most the characters the prefix and suffix bytes share with the secret.
        expect(masked.replace('***', '').replace(/=+$/, '').length, `${prefix}…${suffix}`).toBeLessThanOrEqual(
          Math.ceil(((prefix.length + suffix.length) * 4) / 3) + 2,
        );
      }
    }
  });

  it('masks each line of a secret of several lines, and the whole', () => {
    const m = masker();
    expect(m.text('only line two secret here')).toBe('only *** here');
    expect(m.text('line one secret\nline two secret')).toBe('***');
    expect(m.text('line one secret\r\nline two secret')).toBe('***\r\n***');
    const crlf = new Masker(['first-line\r\nsecond-line']);
    expect(crlf.text('a second-line b')).toBe('a *** b');
    // A line too short to mask alone is not masked alone.
    const shortLine = new Masker(['ab\nlong-enough-line']);
    expect(shortLine.text('ab cd')).toBe('ab cd');
    expect(shortLine.text('x long-enough-line')).toBe('x ***');
    const blankish = new Masker(['  x \nanother-line']);
    expect(blankish.text('  x  y')).toBe('  x  y');
  });

  it(`ignores secrets under ${MIN_SECRET_LENGTH} characters, and masks one of exactly ${MIN_SECRET_LENGTH}`, () => {
    expect(new Masker(['abc']).empty).toBe(true);
    expect(new Masker(['abc']).text('abc')).toBe('abc');
    const four = new Masker(['abcd']);
    expect(four.empty).toBe(false);
    expect(four.text('xabcdx')).toBe('x***x');
    expect(new Masker([]).empty).toBe(true);
  });

  it('masks the longest form first, so that a secret inside another leaves nothing of the longer', () => {
    const m = new Masker(['secret', 'my-secret-value']);
    expect(m.text('is my-secret-value.')).toBe('is ***.');
    const reversed = new Masker(['my-secret-value', 'secret']);
    expect(reversed.text('is my-secret-value.')).toBe('is ***.');
  });

  it('masks string values of a JSON-like value only: keys, numbers, null and structure kept', () => {
    const m = masker();
    const value = { [SECRET]: [`said ${SECRET}`, 1, null, true, { deep: SECRET }], n: 2 };
    expect(m.value(value)).toEqual({ [SECRET]: ['said ***', 1, null, true, { deep: '***' }], n: 2 });
    expect(m.value(SECRET)).toBe('***');
    expect(new Masker([]).value(value)).toBe(value);
  });

  it('writes JSON lines with string values masked, even where the secret needs escaping in JSON', () => {
    const m = masker();
    const line = m.line({ [SECRET]: `said ${SECRET}`, n: 1 });
    expect(JSON.parse(line)).toEqual({ [SECRET]: 'said ***', n: 1 });
    // A value that holds the JSON-escaped form (escaped once more inside the line) is still found.
    expect(m.line({ v: JSON.stringify(SECRET) })).toBe(JSON.stringify({ v: '"***"' }));
    expect(m.line({ v: 'clean' })).toBe('{"v":"clean"}');
    expect(new Masker([]).line({ v: SECRET })).toBe(JSON.stringify({ v: SECRET }));
  });

  it('loose: a secret broken across lines, and the whole base64 run around one', () => {
    const m = masker();
    expect(m.loose(`a ${SECRET.slice(0, 6)}\n${SECRET.slice(6)} b`)).toBe('a *** b');
    expect(m.loose(`a ${SECRET.slice(0, 6)}\r\n${SECRET.slice(6)} b`)).toBe('a *** b');
    const token = b64(`user:${SECRET}`);
    expect(m.loose(`token ${token} end`)).toBe('token *** end');
    expect(m.loose(`${token}`)).toBe('***');
    expect(m.loose(`=${token}==`)).toBe('=***');
    expect(m.loose('nothing here')).toBe('nothing here');
    expect(new Masker([]).loose(SECRET)).toBe(SECRET);
    // Two secrets next to each other in one base64 run are one mask; apart, two.
    expect(m.loose(`${SECRET} and ${SECRET}`)).toBe('*** and ***');
    expect(m.loose(`${SECRET}${SECRET}`)).toBe('***');
  });
});
