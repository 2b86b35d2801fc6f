import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { interpolate, MissingValueError, shellQuote, evaluate } from '../../src/workflow/evaluate.js';
import { ExpressionSyntaxError, parseExpression } from '../../src/workflow/expression.js';
import { parseTemplate } from '../../src/workflow/template.js';

const scope = {
  inputs: { pr: 42, focus: '', flag: false, 'with-dash': 'dashed', name: '  padded  ' },
  env: { BASE_REF: 'main' },
  setup: { diff: 'diff --git a b' },
  workflow: { name: 'pr-review', file: 'review.yml' },
  proposals: { verdict: { winner: null, tally: { approve: 2, 'request-changes': 1 } } },
  agents: { lead: { last_message: 'done', turns: 3 } },
  list: ['a', 'b'],
};

const value = (source: string) => evaluate(parseExpression(source), scope);
const render = (template: string) => interpolate(parseTemplate(template).parts, scope);

describe('expressions', () => {
  it.each([
    ['inputs.pr', 42],
    ["inputs['with-dash']", 'dashed'],
    ['inputs.with-dash', 'dashed'],
    ["proposals.verdict.tally['request-changes']", 1],
    ['list[1]', 'b'],
    ['agents.lead.turns', 3],
    ["'it''s'", undefined],
    ["'a \\'quoted\\' word'", "a 'quoted' word"],
    ['"double"', 'double'],
    ['-1.5', -1.5],
    ['true', true],
    ['null', null],
    ["inputs.focus || 'correctness'", 'correctness'],
    ["inputs.missing || inputs.focus || 'last'", 'last'],
    ["inputs.flag || 'fallback'", 'fallback'],
    ["default(inputs.flag, 'fallback')", false],
    ["default(proposals.verdict.winner, 'no-decision')", 'no-decision'],
    ['default(inputs.nothing, inputs.pr)', 42],
    ['json(proposals.verdict.tally)', '{"approve":2,"request-changes":1}'],
    ["json('x')", '"x"'],
    ['trim(inputs.name)', 'padded'],
    ['(inputs.pr)', 42],
  ])('%s', (source, expected) => {
    if (expected === undefined) {
      expect(() => parseExpression(source)).toThrow(ExpressionSyntaxError);
    } else {
      expect(value(source)).toEqual(expected);
    }
  });

  it.each([
    ['inputs.', "expected a name after '.'", 7],
    ["inputs['a'", "expected ']'", 10],
    ['inputs[a]', "expected a quoted key or a list index after '['", 7],
    ["inputs.a | 'b'", "unexpected character '|' (the fallback operator is '||': a || 'default')", 9],
    ["inputs.a ?? 'b'", "unexpected character '?' (the fallback operator is '||': a || 'default')", 9],
    ['foo(1)', 'unknown function "foo" (functions: json, default, trim, lines, from_json)', 0],
    ['json(1, 2)', 'json() takes 1 argument, not 2', 0],
    ["'open", 'this string has no closing quote', 0],
    ['inputs.a inputs.b', 'unexpected text after the expression', 9],
    ['', 'expected a value, found the end', 0],
    ["'\\q'", 'unknown escape \\q in a string', 1],
  ])('rejects %j: %s', (source, message, offset) => {
    try {
      parseExpression(source);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ExpressionSyntaxError);
      expect((e as ExpressionSyntaxError).message).toBe(message);
      expect((e as ExpressionSyntaxError).offset).toBe(offset);
    }
  });

  it('throws MissingValueError naming the path that has no value', () => {
    expect(() => value('inputs.nothing')).toThrow(new MissingValueError('inputs.nothing', 0));
    expect(() => value("json(setup['later'])")).toThrow("setup['later'] has no value");
  });
});

describe('templates', () => {
  it('interpolates expressions and keeps text around them', () => {
    expect(render('PR #$<< inputs.pr >> on $<<env.BASE_REF>>.')).toBe('PR #42 on main.');
  });

  it('writes $$<< as a literal $<<', () => {
    expect(render('literal $$<< inputs.pr >> and $<< inputs.pr >>')).toBe('literal $<< inputs.pr >> and 42');
  });

  it('renders null as nothing and objects as JSON', () => {
    expect(render('[$<< proposals.verdict.winner >>] $<< agents.lead >>')).toBe('[] {"last_message":"done","turns":3}');
  });

  it('finds the closing >> outside quoted strings', () => {
    expect(render("$<< inputs.missing || 'a >> b' >>!")).toBe('a >> b!');
  });

  it('reports an unresolved value with its offset in the template, never leaving it in the text', () => {
    try {
      render('abc $<< inputs.nope >>');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(MissingValueError);
      expect((e as MissingValueError).offset).toBe(8);
    }
  });

  it('reports an unclosed and an empty expression', () => {
    expect(parseTemplate('a $<< b').errors).toEqual([{ message: '"$<<" has no closing ">>"', start: 2, end: 7, at: 2 }]);
    expect(parseTemplate('a $<<  >> b').errors[0]!.message).toBe('empty expression "$<< >>"');
  });
});

describe('values in setup steps', () => {
  it('are shell-quoted so that they never run as code', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-quote-'));
    const hostile = [`$(touch pwned)`, '`touch pwned2`', "it's; touch pwned3", '"; touch pwned4 #', '* ~ $HOME \\ \n newline'];
    for (const input of hostile) {
      const command = interpolate(parseTemplate('printf %s $<< inputs.value >>').parts, { inputs: { value: input } }, shellQuote);
      const output = execFileSync('sh', ['-c', command], { cwd: dir, encoding: 'utf8' });
      expect(output).toBe(input);
    }
    for (const file of ['pwned', 'pwned2', 'pwned3', 'pwned4']) expect(existsSync(join(dir, file))).toBe(false);
  });
});

describe('parseTemplate, reading straight to each $<<', () => {
  /** The reading it replaced, a character at a time: the two must split every text alike. */
  function literalRuns(text: string): string[] {
    const runs: string[] = [];
    let literal = '';
    let i = 0;
    while (i < text.length) {
      if (text.startsWith('$$<<', i)) {
        literal += '$<<';
        i += 4;
      } else if (text.startsWith('$<<', i)) {
        const close = text.indexOf('>>', i + 3);
        if (close === -1) return [...runs, literal + text.slice(i)];
        runs.push(literal);
        literal = '';
        i = close + 2;
      } else {
        literal += text[i++];
      }
    }
    return [...runs, literal];
  }
  const PIECES = ['$', '$$', '<', '<<', '>', '>>', 'a', ' ', '\n', 'inputs.x', '$<<', '$$<<', '>>', ' inputs.pr ', 'é'];

  it('splits 2,000 random texts of $, <, > and words as the character-at-a-time reading did', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let n = 0; n < 2000; n++) {
      const text = Array.from({ length: 1 + Math.floor(rand() * 12) }, () => PIECES[Math.floor(rand() * PIECES.length)]).join('');
      const { parts, errors } = parseTemplate(text);
      // Quotes are absent, so the expressions end at the first >>: the literal runs between them must agree.
      const runs = literalRuns(text).filter((run) => run !== '');
      const texts = parts.filter((p) => p.kind === 'text').map((p) => p.text);
      const unclosed = errors.some((e) => e.message.includes('no closing'));
      const empty = errors.some((e) => e.message.startsWith('empty'));
      if (!empty) expect(texts.join('|'), JSON.stringify(text)).toBe(runs.join('|'));
      if (unclosed) expect(texts.at(-1) ?? '', JSON.stringify(text)).toContain('$<<');
    }
  });
});
