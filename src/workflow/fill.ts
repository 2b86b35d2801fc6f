import { ConclaveError } from '../conclave-error.js';
import type { Diagnostic } from './diagnostic.js';
import { interpolate, MissingValueError, type Scope } from './evaluate.js';
import type { LocatedTemplate } from './load.js';
import type { TemplatePart } from './template.js';

/** A value a template needs is missing at run time; the diagnostic says where. */
export class UnresolvedValueError extends ConclaveError {
  constructor(readonly diagnostic: Diagnostic) {
    super(`${diagnostic.file}:${diagnostic.line}:${diagnostic.col}: ${diagnostic.message}`);
  }
}

/** Evaluates a template of the workflow; a missing value is an error at the expression's position. */
export function fillTemplate(
  template: LocatedTemplate,
  scope: Scope,
  quote?: (text: string, part: Extract<TemplatePart, { kind: 'expr' }>) => string,
  hint = '',
): string {
  try {
    return interpolate(template.parts, scope, quote);
  } catch (e) {
    if (!(e instanceof MissingValueError)) throw e;
    const part = template.parts.find((p) => p.kind === 'expr' && p.start <= e.offset && e.offset < p.end);
    const span = part && part.kind === 'expr' ? part : { start: e.offset, end: e.offset + 1 };
    const position = template.locate(span.start, span.end, e.offset);
    throw new UnresolvedValueError({ file: template.file, ...position, severity: 'error', message: `${e.path} has no value${hint}` });
  }
}
