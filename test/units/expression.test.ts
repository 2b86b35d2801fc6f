import { describe, expect, it } from 'vitest';
import { ExpressionSyntaxError, parseExpression, pathsOf } from '../../src/workflow/expression.js';

const syntax = (source: string): [string, number] | undefined => {
  try {
    parseExpression(source);
  } catch (e) {
    if (e instanceof ExpressionSyntaxError) return [e.message, e.offset];
    throw e;
  }
  return undefined;
};

describe('expression syntax at its edges', () => {
  it('keeps the text of each path exactly as written, whatever its last token', () => {
    const texts = (source: string) => pathsOf(parseExpression(source)).map((p) => p.text);
    expect(texts("inputs['a b']")).toEqual(["inputs['a b']"]);
    expect(texts('inputs["it\\"s"]')).toEqual(['inputs["it\\"s"]']);
    expect(texts('list[12]')).toEqual(['list[12]']);
    expect(texts("inputs.a || default(inputs.b, 'x') || json(env.c)")).toEqual(['inputs.a', 'inputs.b', 'env.c']);
    expect(texts("'just text'")).toEqual([]);
    expect(texts('inputs')).toEqual(['inputs']);
  });

  it('reads literals: true, false, null, numbers and strings with escapes', () => {
    expect(parseExpression('true')).toMatchObject({ kind: 'literal', value: true });
    expect(parseExpression('false')).toMatchObject({ kind: 'literal', value: false });
    expect(parseExpression('null')).toMatchObject({ kind: 'literal', value: null });
    expect(parseExpression("'a\\'b'")).toMatchObject({ kind: 'literal', value: "a'b" });
    expect(parseExpression('truex')).toMatchObject({ kind: 'path', root: 'truex' });
  });

  it('names what is wrong, and where', () => {
    expect(syntax('inputs.')).toEqual(["expected a name after '.'", 7]);
    expect(syntax('list[-1]')).toEqual(["expected a quoted key or a list index after '['", 5]);
    expect(syntax('list[1.5]')).toEqual(["expected a quoted key or a list index after '['", 5]);
    expect(syntax('list[0')).toEqual(["expected ']'", 6]);
    expect(syntax('inputs.a inputs.b')).toEqual(['unexpected text after the expression', 9]);
    expect(syntax("json('a', 'b')")?.[0]).toBe('json() takes 1 argument, not 2');
    expect(syntax("default('a')")?.[0]).toBe('default() takes 2 arguments, not 1');
    expect(syntax('(inputs.a')).toEqual(["expected ')'", 9]);
    expect(syntax("'open")).toEqual(['this string has no closing quote', 0]);
    expect(syntax('json(')).toEqual(['expected a value, found the end', 5]);
    expect(syntax("json('a' 'b')")).toEqual(["expected ')' or ','", 9]);
    expect(syntax('inputs.a )')).toEqual(['unexpected text after the expression', 9]);
    expect(syntax('inputs.a | inputs.b')).toEqual(["unexpected character '|' (the fallback operator is '||': a || 'default')", 9]);
    expect(syntax('inputs.a ?? inputs.b')).toEqual(["unexpected character '?' (the fallback operator is '||': a || 'default')", 9]);
    expect(syntax('inputs.a ? inputs.b')).toEqual(["unexpected character '?'", 9]);
  });

  it('nests parentheses up to its depth limit, and no further', () => {
    const nested = (n: number) => `${'('.repeat(n)}inputs.a${')'.repeat(n)}`;
    expect(syntax(nested(32))).toBeUndefined();
    expect(syntax(nested(33))).toEqual(['the expression nests more than 32 levels deep', 33]);
  });
});
