import { ConclaveError } from '../conclave-error.js';
import type { Expr } from './expression.js';
import type { TemplatePart } from './template.js';

/** The values expressions read: { inputs, env, setup, workflow, run, result, agents, proposals, usage }. */
export type Scope = Record<string, unknown>;

/** An expression read a value that does not exist. */
export class MissingValueError extends ConclaveError {
  constructor(
    readonly path: string,
    readonly offset: number,
  ) {
    super(`${path} has no value`);
  }
}

/** A value an expression read cannot be used as it must be (`from_json` of text that is not JSON). */
export class ExpressionValueError extends ConclaveError {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const MISSING = Symbol('missing');

function fromJson(text: string, offset: number): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ExpressionValueError(`from_json: the text is not JSON (${(e as Error).message}): ${JSON.stringify(text.slice(0, 60))}`, offset);
  }
}

export function evaluate(expr: Expr, scope: Scope): unknown {
  const value = evaluateOrMissing(expr, scope);
  if (value === MISSING) throw missingIn(expr, scope);
  return value;
}

function evaluateOrMissing(expr: Expr, scope: Scope): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'path': {
      let value: unknown = Object.hasOwn(scope, expr.root) ? scope[expr.root] : MISSING;
      for (const key of expr.keys) {
        if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return MISSING;
        value = (value as Record<string | number, unknown>)[key];
      }
      return value === undefined ? MISSING : value;
    }
    case 'or': {
      const left = evaluateOrMissing(expr.left, scope);
      return isEmpty(left) || left === false ? evaluateOrMissing(expr.right, scope) : left;
    }
    case 'call': {
      const [first, second] = expr.args;
      if (expr.name === 'default') {
        const value = evaluateOrMissing(first!, scope);
        return isEmpty(value) ? evaluateOrMissing(second!, scope) : value;
      }
      const value = evaluate(first!, scope);
      if (expr.name === 'json') return JSON.stringify(value) ?? 'null';
      if (expr.name === 'trim') return render(value).trim();
      if (expr.name === 'lines')
        return render(value)
          .split(/\r?\n/)
          .map((line) => line.trim())
          .filter((line) => line !== '');
      if (expr.name === 'from_json') return fromJson(render(value), expr.offset);
      throw new Error(`function ${expr.name} has no implementation`);
    }
  }
}

function isEmpty(value: unknown): boolean {
  return value === MISSING || value === null || value === '';
}

/** The first path in `expr` that has no value, as the error to report. */
function missingIn(expr: Expr, scope: Scope): MissingValueError {
  if (expr.kind === 'path') return new MissingValueError(expr.text, expr.offset);
  const children = expr.kind === 'or' ? [expr.left, expr.right] : expr.kind === 'call' ? expr.args : [];
  for (const child of children) {
    if (evaluateOrMissing(child, scope) === MISSING) return missingIn(child, scope);
  }
  return new MissingValueError('the expression', expr.offset);
}

/** How a value reads inside text: strings as they are, null as nothing, the rest as JSON. */
export function render(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** A value as one word for `sh`: single-quoted, so that `$(…)`, backticks and globs stay data. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Evaluates a parsed template. With `quote`, every interpolated value passes through it,
 * as setup steps pass values through shellQuote. A missing value throws MissingValueError
 * with its offset in the template.
 */
export function interpolate(
  parts: readonly TemplatePart[],
  scope: Scope,
  quote?: (text: string, part: Extract<TemplatePart, { kind: 'expr' }>) => string,
): string {
  let out = '';
  for (const part of parts) {
    if (part.kind === 'text') {
      out += part.text;
      continue;
    }
    try {
      const text = render(evaluate(part.expr, scope));
      out += quote ? quote(text, part) : text;
    } catch (e) {
      if (e instanceof MissingValueError) throw new MissingValueError(e.path, part.exprStart + e.offset);
      throw e;
    }
  }
  return out;
}
