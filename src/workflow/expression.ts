import { ConclaveError } from '../conclave-error.js';
/**
 * The `$<< … >>` expression language: dotted paths, `a['key']` and `a[0]`, string, number,
 * boolean and null literals, `||` fallback, and the functions in FUNCTIONS. Nothing else.
 */

export type Expr =
  | { kind: 'literal'; value: string | number | boolean | null; offset: number }
  | { kind: 'path'; root: string; keys: (string | number)[]; offset: number; text: string }
  | { kind: 'call'; name: string; args: Expr[]; offset: number }
  | { kind: 'or'; left: Expr; right: Expr; offset: number };

export type PathExpr = Extract<Expr, { kind: 'path' }>;

/** The functions an expression may call, with how many arguments each takes. */
export const FUNCTIONS: Record<string, { arity: number; doc: string }> = {
  json: { arity: 1, doc: 'json(x): x as JSON text' },
  default: { arity: 2, doc: 'default(x, y): x, or y when x is missing, null or empty' },
  trim: { arity: 1, doc: 'trim(x): x without leading and trailing white space' },
  lines: { arity: 1, doc: 'lines(x): the lines of x, each trimmed, empty ones left out (a list)' },
  from_json: { arity: 1, doc: 'from_json(x): the value the JSON text x holds' },
};

export class ExpressionSyntaxError extends ConclaveError {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

type Token =
  | { type: 'name'; value: string; offset: number }
  | { type: 'string'; value: string; offset: number }
  | { type: 'number'; value: number; offset: number }
  | { type: 'punct'; value: '.' | '[' | ']' | '(' | ')' | ',' | '||'; offset: number }
  | { type: 'end'; offset: number };

const NAME = /[A-Za-z_][A-Za-z0-9_-]*/y;
const NUMBER = /-?\d+(\.\d+)?/y;
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', '\\': '\\', "'": "'", '"': '"' };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (source.startsWith('||', i)) {
      tokens.push({ type: 'punct', value: '||', offset: i });
      i += 2;
    } else if ('.[](),'.includes(c)) {
      tokens.push({ type: 'punct', value: c as '.', offset: i });
      i++;
    } else if (c === "'" || c === '"') {
      const start = i;
      let value = '';
      i++;
      while (i < source.length && source[i] !== c) {
        if (source[i] === '\\' && i + 1 < source.length) {
          const escaped = ESCAPES[source[i + 1]!];
          if (escaped === undefined) throw new ExpressionSyntaxError(`unknown escape \\${source[i + 1]} in a string`, i);
          value += escaped;
          i += 2;
        } else {
          value += source[i++];
        }
      }
      if (i >= source.length) throw new ExpressionSyntaxError('this string has no closing quote', start);
      i++;
      tokens.push({ type: 'string', value, offset: start });
    } else if (matchAt(NUMBER, source, i)) {
      const text = matchAt(NUMBER, source, i)!;
      tokens.push({ type: 'number', value: Number(text), offset: i });
      i += text.length;
    } else if (matchAt(NAME, source, i)) {
      const text = matchAt(NAME, source, i)!;
      tokens.push({ type: 'name', value: text, offset: i });
      i += text.length;
    } else {
      const hint = c === '|' || (c === '?' && source[i + 1] === '?') ? " (the fallback operator is '||': a || 'default')" : '';
      throw new ExpressionSyntaxError(`unexpected character '${c}'${hint}`, i);
    }
  }
  tokens.push({ type: 'end', offset: source.length });
  return tokens;
}

function matchAt(pattern: RegExp, source: string, at: number): string | undefined {
  pattern.lastIndex = at;
  return pattern.exec(source)?.[0];
}

/** How deep parentheses and calls may nest in one expression: deeper is refused, not a stack overflow. */
export const MAX_EXPRESSION_DEPTH = 32;

/** Parses the text between `$<<` and `>>`. Offsets in the result are relative to `source`. */
export function parseExpression(source: string): Expr {
  const tokens = tokenize(source);
  let pos = 0;
  let depth = 0;
  const peek = () => tokens[pos]!;
  const isPunct = (value: string) => {
    const t = peek();
    return t.type === 'punct' && t.value === value;
  };
  const expect = (value: string, what: string) => {
    if (!isPunct(value)) throw new ExpressionSyntaxError(`expected ${what}`, peek().offset);
    pos++;
  };

  function parseOr(): Expr {
    let left = parsePrimary();
    while (isPunct('||')) {
      const offset = peek().offset;
      pos++;
      left = { kind: 'or', left, right: parsePrimary(), offset };
    }
    return left;
  }

  function parsePrimary(): Expr {
    const t = peek();
    if (depth > MAX_EXPRESSION_DEPTH) throw new ExpressionSyntaxError(`the expression nests more than ${MAX_EXPRESSION_DEPTH} levels deep`, t.offset);
    if (t.type === 'string' || t.type === 'number') {
      pos++;
      return { kind: 'literal', value: t.value, offset: t.offset };
    }
    if (isPunct('(')) {
      pos++;
      depth++;
      const inner = parseOr();
      depth--;
      expect(')', "')'");
      return inner;
    }
    if (t.type !== 'name') {
      const what = t.type === 'end' ? 'the end' : `'${t.type === 'punct' ? t.value : ''}'`;
      throw new ExpressionSyntaxError(`expected a value, found ${what}`, t.offset);
    }
    pos++;
    if (isPunct('(')) return parseCall(t.value, t.offset);
    if (t.value === 'true' || t.value === 'false' || t.value === 'null') {
      return { kind: 'literal', value: t.value === 'null' ? null : t.value === 'true', offset: t.offset };
    }
    return parsePath(t.value, t.offset);
  }

  function parseCall(name: string, offset: number): Expr {
    const fn = FUNCTIONS[name];
    if (!fn) {
      throw new ExpressionSyntaxError(`unknown function "${name}" (functions: ${Object.keys(FUNCTIONS).join(', ')})`, offset);
    }
    pos++;
    const args: Expr[] = [];
    if (!isPunct(')')) {
      args.push(parseOr());
      while (isPunct(',')) {
        pos++;
        args.push(parseOr());
      }
    }
    expect(')', "')' or ','");
    if (args.length !== fn.arity) {
      throw new ExpressionSyntaxError(`${name}() takes ${fn.arity} argument${fn.arity === 1 ? '' : 's'}, not ${args.length}`, offset);
    }
    return { kind: 'call', name, args, offset };
  }

  function parsePath(root: string, offset: number): Expr {
    const keys: (string | number)[] = [];
    for (;;) {
      if (isPunct('.')) {
        pos++;
        const t = peek();
        if (t.type !== 'name') throw new ExpressionSyntaxError("expected a name after '.'", t.offset);
        keys.push(t.value);
        pos++;
      } else if (isPunct('[')) {
        pos++;
        const t = peek();
        if (t.type !== 'string' && !(t.type === 'number' && Number.isInteger(t.value) && t.value >= 0)) {
          throw new ExpressionSyntaxError("expected a quoted key or a list index after '['", t.offset);
        }
        keys.push(t.value);
        pos++;
        expect(']', "']'");
      } else {
        break;
      }
    }
    const last = tokens[pos - 1]!;
    const text = source.slice(offset, last.offset + tokenLength(source, last));
    return { kind: 'path', root, keys, offset, text };
  }

  const expr = parseOr();
  const rest = peek();
  if (rest.type !== 'end') {
    throw new ExpressionSyntaxError('unexpected text after the expression', rest.offset);
  }
  return expr;
}

function tokenLength(source: string, t: Token): number {
  if (t.type === 'end') return 0;
  if (t.type === 'punct') return t.value.length;
  if (t.type === 'name') return t.value.length;
  return (matchAt(t.type === 'number' ? NUMBER : /'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"/y, source, t.offset) ?? '').length;
}

/** Every path the expression reads, in order. */
export function pathsOf(expr: Expr): PathExpr[] {
  switch (expr.kind) {
    case 'literal':
      return [];
    case 'path':
      return [expr];
    case 'call':
      return expr.args.flatMap(pathsOf);
    case 'or':
      return [...pathsOf(expr.left), ...pathsOf(expr.right)];
  }
}
