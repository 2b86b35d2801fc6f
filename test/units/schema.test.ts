import { describe, expect, it } from 'vitest';
import { array, boolean, integer, isObject, json, nullable, number, object, oneOf, optional, record, string, text } from '../../src/session/schema.js';
import { EVENTS, HEADER, isKnownType } from '../../src/session/session-events.js';

const problem = (schema: { problem(v: unknown, p: string): string | undefined }, v: unknown, path = 'f') => schema.problem(v, path);

describe('the session schema language', () => {
  it('checks each kind, naming the field and what was found', () => {
    expect(problem(string(), 's')).toBeUndefined();
    expect(problem(string(), 1)).toBe('"f" must be a string; found number 1');
    expect(problem(text(), 'x')).toBeUndefined();
    expect(problem(text(), '')).toBe('"f" must be a non-empty string; found string ""');
    expect(problem(integer(), 2)).toBeUndefined();
    expect(problem(integer(), 2.5)).toBe('"f" must be a whole number; found number 2.5');
    expect(problem(integer(), 2 ** 60)).toMatch(/whole number/);
    expect(problem(number(), 2.5)).toBeUndefined();
    expect(problem(number(), Infinity)).toBe('"f" must be a number; found number null');
    expect(problem(number(), '1')).toBe('"f" must be a number; found string "1"');
    expect(problem(boolean(), false)).toBeUndefined();
    expect(problem(boolean(), 0)).toBe('"f" must be true or false; found number 0');
    expect(problem(json(), null)).toBeUndefined();
    expect(problem(json(), undefined)).toBe('"f" must be present; found nothing');
    expect(problem(oneOf('a', 'b'), 'c')).toBeUndefined(); // a later version may add values
    expect(problem(oneOf('a', 'b'), 1)).toMatch(/must be a string/);
  });

  it('checks lists, records, objects, nulls and optional fields, with the path to the first problem', () => {
    expect(problem(array(integer()), [1, 2])).toBeUndefined();
    expect(problem(array(integer()), [1, 'x'])).toBe('"f[1]" must be a whole number; found string "x"');
    expect(problem(array(integer()), {})).toBe('"f" must be a list; found an object');
    expect(problem(record(string()), { a: 'x', b: 'y' })).toBeUndefined();
    expect(problem(record(string()), { a: 'x', b: 2 })).toBe('"f.b" must be a string; found number 2');
    expect(problem(record(string()), [])).toBe('"f" must be an object; found a list');
    const shape = object({ a: integer(), b: optional(string()), c: nullable(object({ d: boolean() })) });
    expect(problem(shape, { a: 1, c: null })).toBeUndefined();
    expect(problem(shape, { a: 1, c: null, extra: 'kept' })).toBeUndefined();
    expect(problem(shape, { a: 1, b: 3, c: null })).toBe('"f.b" must be a string; found number 3');
    expect(problem(shape, { a: 1, c: { d: 'no' } })).toBe('"f.c.d" must be true or false; found string "no"');
    expect(problem(shape, { a: 1, c: 5 })).toBe('"f.c" must be an object or null; found number 5');
    expect(problem(shape, { c: null })).toBe('"f.a" must be a whole number; found nothing');
    expect(problem(shape, null)).toBe('"f" must be an object; found null');
    expect(problem(shape, { a: 1, c: null }, '')).toBeUndefined();
    expect(problem(object({ a: integer() }), {}, '')).toBe('"a" must be a whole number; found nothing');
    expect(shape.doc).toBe('{ a: integer, b?: string, c: { d: boolean } or null }');
    expect(array(string()).doc).toBe('string[]');
    expect(record(integer()).doc).toBe('{ string: integer }');
    expect(oneOf('x', 'y').doc).toBe('`x`, `y`');
  });

  it('isObject holds records only', () => {
    expect(isObject({})).toBe(true);
    expect(isObject([])).toBe(false);
    expect(isObject(null)).toBe(false);
    expect(isObject('s')).toBe(false);
  });

  it('knows the events of this format, and no inherited name', () => {
    expect(isKnownType('model_call')).toBe(true);
    expect(isKnownType('toString')).toBe(false);
    expect(isKnownType('agent_spawned_in_the_future')).toBe(false);
    expect(Object.keys(HEADER.fields)).toContain('run_id');
    expect(EVENTS.turn_started.schema.problem({ agent: 'a', turn: 1, through: 0, messages: [] }, '')).toBeUndefined();
  });
});
