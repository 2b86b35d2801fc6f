import { createRequire } from 'node:module';
import type { Diagnostic } from './diagnostic.js';
import type { WorkflowSource } from './source.js';
import type { TypedOutput, WorkflowSpec } from './types.js';
import { isRecord, recordOf } from './value-checks.js';

/** The Action's own outputs: a workflow output may not take their names (DESIGN §12). */
export const RESERVED_OUTPUTS = ['status', 'exit-code', 'cost-usd', 'session-file', 'outputs'];

/** The workflow's typed outputs (those declared as a JSON Schema fragment), by name. */
export function typedOutputs(spec: WorkflowSpec): Record<string, TypedOutput> {
  return Object.fromEntries(Object.entries(recordOf(spec.outputs)).filter((entry): entry is [string, TypedOutput] => isRecord(entry[1])));
}

/** The schema of `complete`'s `outputs`: every typed output, required, nothing else. */
export function outputsSchema(typed: Record<string, TypedOutput>): Record<string, unknown> {
  return { type: 'object', properties: typed, required: Object.keys(typed), additionalProperties: false };
}

interface Ajv {
  validateSchema(schema: unknown): boolean;
  compile(schema: unknown): ((value: unknown) => boolean) & { errors?: AjvError[] | null };
  errorsText(errors?: AjvError[] | null, options?: { dataVar?: string }): string;
  errors?: AjvError[] | null;
}
interface AjvError {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Ajv for JSON Schema 2020-12, loaded only for a workflow with typed outputs. */
function ajv(): Ajv {
  const Ajv2020 = createRequire(import.meta.url)('ajv/dist/2020') as { default: new (options: object) => Ajv };
  return new Ajv2020.default({ allErrors: true, strict: true });
}

/** Reserved names, and typed declarations that are not valid JSON Schema, at their place in the file. */
export function outputProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const name of Object.keys(recordOf(spec.outputs))) {
    if (RESERVED_OUTPUTS.includes(name)) {
      out.push(source.error(source.keyPosition(['outputs', name]), `outputs.${name} has the name of one of the Action's own outputs (${RESERVED_OUTPUTS.join(', ')}): choose another name`));
    }
  }
  const typed = typedOutputs(spec);
  if (Object.keys(typed).length === 0) return out;
  const checker = ajv();
  for (const [name, fragment] of Object.entries(typed)) {
    let problem: string | undefined;
    try {
      if (!checker.validateSchema(fragment)) problem = checker.errorsText(checker.errors, { dataVar: 'it' });
      else checker.compile(fragment);
    } catch (e) {
      problem = (e as Error).message;
    }
    if (problem) out.push(source.error(source.valuePosition(['outputs', name]), `outputs.${name} is not a valid JSON Schema: ${problem}`));
  }
  return out;
}

/** Checks `complete`'s outputs against the declarations: what is wrong, in words, or undefined. */
export function outputsChecker(typed: Record<string, TypedOutput>): (value: unknown) => string | undefined {
  const validate = ajv().compile(outputsSchema(typed));
  return (value) => {
    if (validate(value)) return undefined;
    return (validate.errors ?? []).map(describe).join('; ');
  };
}

function describe(error: AjvError): string {
  const where = `outputs${error.instancePath.replace(/\//g, '.')}`;
  if (Array.isArray(error.params.allowedValues)) return `${where} must be one of ${error.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (typeof error.params.missingProperty === 'string') return `${where} must have ${error.params.missingProperty}`;
  if (typeof error.params.additionalProperty === 'string') return `${where} has ${error.params.additionalProperty}, which is not declared`;
  return `${where} ${error.message ?? 'is not valid'}`;
}
