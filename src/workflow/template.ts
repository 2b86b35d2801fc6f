import { ExpressionSyntaxError, parseExpression, type Expr } from './expression.js';

export type TemplatePart =
  | { kind: 'text'; text: string }
  /** `start`/`end` span `$<< … >>` in the template; `exprStart` is where its expression text begins. */
  | { kind: 'expr'; expr: Expr; start: number; end: number; exprStart: number };

export interface TemplateError {
  message: string;
  /** The span of the `$<< … >>` in the template and the offset the message is about. */
  start: number;
  end: number;
  at: number;
}

export interface Template {
  parts: TemplatePart[];
  errors: TemplateError[];
}

const OPEN = '$<<';
const CLOSE = '>>';

/** Splits text into literal runs and `$<< … >>` expressions; `$$<<` is a literal `$<<`. */
export function parseTemplate(text: string): Template {
  const parts: TemplatePart[] = [];
  const errors: TemplateError[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    // Straight to the next `$<<` (a prompt is mostly text): what comes before it is literal.
    const open = text.indexOf(OPEN, i);
    if (open === -1) {
      literal += text.slice(i);
      break;
    }
    if (open > i && text[open - 1] === '$') {
      literal += text.slice(i, open - 1) + OPEN;
      i = open + OPEN.length;
      continue;
    }
    literal += text.slice(i, open);
    const start = open;
    const exprStart = open + OPEN.length;
    const close = findClose(text, exprStart);
    if (close === -1) {
      errors.push({ message: '"$<<" has no closing ">>"', start, end: text.length, at: start });
      literal += text.slice(start);
      break;
    }
    const end = close + CLOSE.length;
    const source = text.slice(exprStart, close);
    if (source.trim() === '') {
      errors.push({ message: 'empty expression "$<< >>"', start, end, at: start });
    } else {
      try {
        if (literal) parts.push({ kind: 'text', text: literal });
        literal = '';
        parts.push({ kind: 'expr', expr: parseExpression(source), start, end, exprStart });
      } catch (e) {
        if (!(e instanceof ExpressionSyntaxError)) throw e;
        errors.push({ message: e.message, start, end, at: exprStart + e.offset });
      }
    }
    i = end;
  }
  if (literal) parts.push({ kind: 'text', text: literal });
  return { parts, errors };
}

/** The offset of the `>>` closing an expression that starts at `from`, skipping quoted strings. */
function findClose(text: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (text.startsWith(CLOSE, i)) {
      return i;
    }
  }
  return -1;
}

export function hasExpressions(text: string): boolean {
  return parseTemplate(text).parts.some((p) => p.kind === 'expr');
}
