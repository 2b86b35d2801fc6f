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

type AjvClass = new (options: object) => { compile(schema: unknown): ((value: unknown) => boolean) & { errors?: unknown[] | null } };

interface AjvError {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Reserved names. (The schema checks each typed declaration against JSON Schema's own meta-schema.) */
export function outputProblems(source: WorkflowSource, spec: WorkflowSpec): Diagnostic[] {
  return Object.keys(recordOf(spec.outputs))
    .filter((name) => RESERVED_OUTPUTS.includes(name))
    .map((name) =>
      source.error(source.keyPosition(['outputs', name]), `outputs.${name} has the name of one of the Action's own outputs (${RESERVED_OUTPUTS.join(', ')}): choose another name`),
    );
}

/**
 * Checks `complete`'s outputs against the declarations: what is wrong, in words, or undefined.
 * Ajv loads only here, when a lead completes a workflow with typed outputs.
 */
export async function outputsChecker(typed: Record<string, TypedOutput>): Promise<(value: unknown) => string | undefined> {
  // ajv is CommonJS: its class is `default` under Node's interop and `default.default` in some bundles.
  const module = (await import('ajv/dist/2020.js')) as unknown as { default: AjvClass | { default: AjvClass } };
  const Ajv2020 = 'default' in module.default ? module.default.default : module.default;
  const validate = new Ajv2020({ allErrors: true, strict: false }).compile(outputsSchema(typed));
  return (value) => {
    if (validate(value)) return undefined;
    return ((validate.errors ?? []) as AjvError[]).map(describe).join('; ');
  };
}

function describe(error: AjvError): string {
  const where = `outputs${error.instancePath.replace(/\//g, '.')}`;
  if (Array.isArray(error.params.allowedValues)) return `${where} must be one of ${error.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (typeof error.params.missingProperty === 'string') return `${where} must have ${error.params.missingProperty}`;
  if (typeof error.params.additionalProperty === 'string') return `${where} has ${error.params.additionalProperty}, which is not declared`;
  return `${where} ${error.message ?? 'is not valid'}`;
}
