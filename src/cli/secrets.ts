import { randomBytes, scryptSync } from 'node:crypto';
import { baseScope, declaredEnv } from '../engine/setup.js';
import { Masker, MIN_SECRET_LENGTH } from '../session/masker.js';
import type { Workflow } from '../workflow/load.js';
import type { Scalar } from '../workflow/types.js';
import { processSecrets, SECRET_NAME } from './process-secrets.js';
import { UsageError } from './usage-error.js';

/** The names of the workflow's secret inputs. */
export function secretInputs(workflow: Workflow): string[] {
  return Object.entries(workflow.spec.inputs ?? {})
    .filter(([, spec]) => spec.secret)
    .map(([name]) => name);
}

/**
 * Every value that must never be written: the API key, secret inputs, the values of the
 * workflow's `env:` and of the process's variables whose names look secret. A secret input or
 * `env:` value too short to mask safely is refused (a UsageError) before anything runs.
 */
export function secretValues(
  workflow: Workflow,
  inputs: Record<string, Scalar>,
  apiKey: string | undefined,
  declaredEnv: Readonly<Record<string, string>> = {},
): string[] {
  const given: [string, string][] = [
    ...secretInputs(workflow).flatMap((name): [string, string][] => (inputs[name] === undefined ? [] : [[`secret input "${name}"`, String(inputs[name])]])),
    ...Object.entries(declaredEnv).flatMap(([name, value]): [string, string][] => (SECRET_NAME.test(name) ? [[`env: ${name}`, value]] : [])),
  ];
  for (const [what, value] of given) {
    if (value.length > 0 && value.length < MIN_SECRET_LENGTH) {
      throw new UsageError(
        `${what} is ${value.length} character${value.length === 1 ? '' : 's'} long: a secret under ${MIN_SECRET_LENGTH} characters cannot be masked without ` +
          `masking ordinary text; use a longer value`,
      );
    }
  }
  const fromProcess = processSecrets();
  return [...new Set([...(apiKey ? [apiKey] : []), ...given.map(([, v]) => v).filter((v) => v !== ''), ...fromProcess])];
}

/** The inputs as the session header keeps them: secrets masked. */
export function maskedInputs(workflow: Workflow, inputs: Record<string, Scalar>): Record<string, Scalar> {
  const secret = new Set(secretInputs(workflow));
  return Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, secret.has(k) ? '***' : v]));
}

/** The masker of a run: every secret (docs/design.md: secrets), checked, and its forms. */
export function maskerFor(
  workflow: Workflow,
  inputs: Record<string, Scalar>,
  apiKey: string | undefined,
  runId: string,
  session: string,
): { masker: Masker; secrets: string[] } {
  const secrets = secretValues(workflow, inputs, apiKey, declaredEnv(workflow, baseScope(workflow, inputs, runId, session)));
  return { masker: new Masker(secrets), secrets };
}

/** A salted scrypt digest of each secret input given: the session keeps these, never the values. */
export function secretChecks(workflow: Workflow, inputs: Record<string, Scalar>): Record<string, string> {
  return Object.fromEntries(
    secretInputs(workflow)
      .filter((name) => inputs[name] !== undefined)
      .map((name) => {
        const salt = randomBytes(16);
        return [name, `scrypt$${salt.toString('base64')}$${digest(String(inputs[name]), salt)}`];
      }),
  );
}

/** The secret inputs whose value differs from the one the session's digest was made of. */
export function changedSecrets(checks: Record<string, unknown> | undefined, inputs: Record<string, Scalar>): string[] {
  return Object.entries(checks ?? {}).flatMap(([name, check]) => {
    const [kind, salt, hash] = typeof check === 'string' ? check.split('$') : [];
    if (kind !== 'scrypt' || !salt || !hash || inputs[name] === undefined) return [];
    return digest(String(inputs[name]), Buffer.from(salt, 'base64')) === hash ? [] : [name];
  });
}

function digest(value: string, salt: Buffer): string {
  return scryptSync(value, salt, 16, { N: 2 ** 14 }).toString('base64');
}
