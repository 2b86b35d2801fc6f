import { describe, expect, it } from 'vitest';
import { evaluate, ExpressionValueError, interpolate, MissingValueError, render, shellQuote } from '../../src/workflow/evaluate.js';
import { parseExpression } from '../../src/workflow/expression.js';
import { parseTemplate } from '../../src/workflow/template.js';

const SCOPE = {
  inputs: { name: 'ada', empty: '', none: null, count: 3, yes: true, no: false, list: ['a', 'b'], obj: { k: 'v' }, spaced: '  pad  ' },
  env: {},
};
const value = (source: string, scope: Record<string, unknown> = SCOPE) => evaluate(parseExpression(source), scope);
const missing = (source: string) => {
  try {
    value(source);
  } catch (e) {
    if (e instanceof MissingValueError) return [e.path, e.offset];
    throw e;
  }
  return undefined;
};

describe('expressions', () => {
  it('read paths, through lists and objects, and only own values', () => {
    expect(value('inputs.name')).toBe('ada');
    expect(value('inputs.obj.k')).toBe('v');
    expect(value('inputs.list[1]')).toBe('b');
    expect(value('inputs.count')).toBe(3);
    expect(value('inputs.none')).toBe(null);
    expect(missing('inputs.missing')).toEqual(['inputs.missing', 0]);
    expect(missing('inputs.name.length')).toEqual(['inputs.name.length', 0]);
    expect(missing('inputs.obj.toString')).toEqual(['inputs.obj.toString', 0]);
    expect(missing('inputs.none.x')).toEqual(['inputs.none.x', 0]);
    expect(missing('inputs.list[5]')).toEqual(['inputs.list[5]', 0]);
    expect(missing('nothing.here')).toEqual(['nothing.here', 0]);
    expect(() => value('inputs.x', { inputs: { x: undefined } })).toThrow('inputs.x has no value');
  });

  it('|| takes the right side when the left is missing, null, empty or false; default() when missing, null or empty', () => {
    expect(value("inputs.missing || 'r'")).toBe('r');
    expect(value("inputs.none || 'r'")).toBe('r');
    expect(value("inputs.empty || 'r'")).toBe('r');
    expect(value("inputs.no || 'r'")).toBe('r');
    expect(value("inputs.yes || 'r'")).toBe(true);
    expect(value("inputs.count || 'r'")).toBe(3);
    expect(value("default(inputs.no, 'r')")).toBe(false);
    expect(value("default(inputs.empty, 'r')")).toBe('r');
    expect(value("default(inputs.name, 'r')")).toBe('ada');
    expect(missing('inputs.a || inputs.b')).toEqual(['inputs.a', 0]);
    expect(missing('default(inputs.a, inputs.b)')).toEqual(['inputs.a', 8]);
  });

  it('json() and trim()', () => {
    expect(value('json(inputs.obj)')).toBe('{"k":"v"}');
    expect(value('json(inputs.none)')).toBe('null');
    expect(value('trim(inputs.spaced)')).toBe('pad');
    expect(value('trim(inputs.count)')).toBe('3');
    expect(missing('json(inputs.gone)')).toEqual(['inputs.gone', 5]);
  });
});

describe('lines() and from_json()', () => {
  it('lines: each line trimmed, empty ones left out; from_json: the value, or an error naming the text', () => {
    const scope = { setup: { files: 'a.ts\r\n  b.ts  \n\n\nc.ts\n', json: '[1, {"a": "b"}]', bad: 'not json' } };
    expect(value('lines(setup.files)', scope)).toEqual(['a.ts', 'b.ts', 'c.ts']);
    expect(value("lines('')", scope)).toEqual([]);
    expect(value('from_json(setup.json)', scope)).toEqual([1, { a: 'b' }]);
    expect(() => value('from_json(setup.bad)', scope)).toThrow(ExpressionValueError);
    expect(() => value('from_json(setup.bad)', scope)).toThrow(/^from_json: the text is not JSON \(.*\): "not json"$/);
    try {
      value('from_json(setup.bad)', scope);
    } catch (e) {
      expect((e as ExpressionValueError).offset).toBe(0);
    }
  });
});

describe('render', () => {
  it('shows strings as they are, null as nothing, numbers and booleans plainly, the rest as JSON', () => {
    expect(render('s')).toBe('s');
    expect(render(null)).toBe('');
    expect(render(undefined)).toBe('');
    expect(render(0)).toBe('0');
    expect(render(false)).toBe('false');
    expect(render(true)).toBe('true');
    expect(render([1, 'a'])).toBe('[1,"a"]');
    expect(render({ a: null })).toBe('{"a":null}');
  });
});

describe('interpolate', () => {
  it('fills a template, quoting each value when asked, and says where a missing value is', () => {
    const template = parseTemplate('Hi $<< inputs.name >>, $<< inputs.count >> for $<< inputs.list >>!');
    expect(interpolate(template.parts, SCOPE)).toBe('Hi ada, 3 for ["a","b"]!');
    expect(interpolate(parseTemplate('echo $<< inputs.name >>').parts, { inputs: { name: "it's" } }, shellQuote)).toBe("echo 'it'\\''s'");
    const broken = parseTemplate('ab $<< inputs.gone >>');
    try {
      interpolate(broken.parts, SCOPE);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(MissingValueError);
      expect((e as MissingValueError).path).toBe('inputs.gone');
      expect((e as MissingValueError).offset).toBe(7);
    }
  });
});
