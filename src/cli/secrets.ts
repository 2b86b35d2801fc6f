import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';

/** Environment variables whose values are masked in the session file. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE/i;

/** The names of the workflow's secret inputs. */
export function secretInputs(workflow: Workflow): string[] {
  return Object.entries(workflow.spec.inputs ?? {})
    .filter(([, spec]) => spec.secret)
    .map(([name]) => name);
}

/** Every value that must never reach the session file: the API key, secret inputs, secret-looking environment variables. */
export function secretValues(workflow: Workflow, inputs: Record<string, Scalar>, apiKey: string | undefined): string[] {
  return unique([
    ...(apiKey ? [apiKey] : []),
    ...secretInputs(workflow).flatMap((name) => (inputs[name] === undefined ? [] : [String(inputs[name])])),
    ...Object.entries(process.env).flatMap(([name, value]) => (SECRET_NAME.test(name) && value && value.length >= 6 ? [value] : [])),
  ]);
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** The inputs as the session header keeps them: secrets masked. */
export function maskedInputs(workflow: Workflow, inputs: Record<string, Scalar>): Record<string, Scalar> {
  const secret = new Set(secretInputs(workflow));
  return Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, secret.has(k) ? '***' : v]));
}
