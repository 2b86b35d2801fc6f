import type { Diagnostic } from './diagnostic.js';
import type { WorkflowSource } from './source.js';
import type { TypedOutput, WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

/** The Action's own outputs: a workflow output may not take their names (docs/design.md: outputs and the Action). */
export const RESERVED_OUTPUTS = [
  'status',
  'exit-code',
  'cost-usd',
  'session-file',
  'outputs',
  'run-id',
  'generation',
  'artifact-name',
  'parked',
  'report-file',
  'report-url',
];

/** The workflow's typed outputs (those declared as a JSON Schema fragment), by name. */
export function typedOutputs(spec: WorkflowSpec): Record<string, TypedOutput> {
  return Object.fromEntries(Object.entries(recordOf(spec.outputs)).filter((entry): entry is [string, TypedOutput] => isRecord(entry[1])));
}

/** The schema of `complete`'s `outputs`: every typed output, required, nothing else. */
export function outputsSchema(typed: Record<string, TypedOutput>): Record<string, unknown> {
  return { type: 'object', properties: typed, required: Object.keys(typed), additionalProperties: false };
}

export interface AjvError {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/**
 * Reserved names, `__proto__` (which no object can hold as its own), and references: a
 * declaration is a fragment inside complete's schema, where a `$ref` resolves against a root it
 * cannot see. (The schema checks each declaration against JSON Schema's own meta-schema.)
 */
export function outputProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const problems: Diagnostic[] = [];
  for (const [name, declared] of Object.entries(recordOf(spec.outputs))) {
    if (RESERVED_OUTPUTS.includes(name)) {
      problems.push(
        source.error(
          source.keyPosition(['outputs', name]),
          `outputs.${name} has the name of one of the Action's own outputs (${RESERVED_OUTPUTS.join(', ')}): choose another name`,
        ),
      );
    }
    if (name === '__proto__')
      problems.push(source.error(source.keyPosition(['outputs', name]), 'outputs.__proto__ cannot be an output name: choose another name'));
    const ref = referenceIn(declared, ['outputs', name]);
    if (ref)
      problems.push(source.error(source.keyPosition(ref), `${ref.join('.')}: references ($ref) are not supported in a typed output; write the schema inline`));
  }
  return problems;
}

/** The path of the first `$ref` (or `$dynamicRef`, `$recursiveRef`) inside a declaration. */
function referenceIn(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = referenceIn(item, [...path, i]);
      if (found) return found;
    }
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (['$ref', '$dynamicRef', '$recursiveRef'].includes(key)) return [...path, key];
      const found = referenceIn(item, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

/** One of ajv's errors about `complete`'s outputs, in words. */
export function describeOutputError(error: AjvError): string {
  const where = `outputs${error.instancePath.replace(/\//g, '.')}`;
  if (Array.isArray(error.params.allowedValues)) return `${where} must be one of ${error.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (typeof error.params.missingProperty === 'string') return `${where} must have ${error.params.missingProperty}`;
  if (typeof error.params.additionalProperty === 'string') return `${where} has ${error.params.additionalProperty}, which is not declared`;
  return `${where} ${error.message ?? 'is not valid'}`;
}
