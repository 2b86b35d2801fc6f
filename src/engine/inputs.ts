import { UsageError } from '../conclave-error.js';
import { didYouMean, listOr } from '../workflow/suggest.js';
import type { InputSpec, Scalar } from '../workflow/types.js';

/** A missing, unknown or mistyped input: a usage error (exit 2). */
export class InputError extends UsageError {}

/**
 * The run's input values from `-i key=value` pairs: each converted to its declared type and
 * checked against its enum; defaults fill the rest; a required input that is missing is an error
 * that quotes its description.
 */
export function resolveInputs(specs: Readonly<Record<string, InputSpec>>, pairs: readonly string[]): Record<string, Scalar> {
  const given = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new InputError(`-i expects key=value; got ${JSON.stringify(pair)}`);
    const key = pair.slice(0, eq);
    if (!Object.hasOwn(specs, key)) {
      const declared = Object.keys(specs);
      const known = declared.length ? `; its inputs are ${declared.join(', ')}` : '; it declares no inputs';
      throw new InputError(`the workflow has no input "${key}"${didYouMean(key, declared)}${known}`);
    }
    given.set(key, pair.slice(eq + 1));
  }
  const values: Record<string, Scalar> = {};
  const missing = Object.entries(specs).filter(([name, spec]) => !given.has(name) && spec.default === undefined && spec.required);
  if (missing.length > 0) {
    throw new InputError(
      missing.length === 1
        ? `input "${missing[0]![0]}" is required${about(missing[0]![1])}: give it with -i ${missing[0]![0]}=VALUE`
        : `inputs ${missing.map(([name, spec]) => `"${name}"${about(spec)}`).join(', ')} are required: give them with ` +
            `${missing.map(([name]) => `-i ${name}=VALUE`).join(' ')}`,
    );
  }
  for (const [name, spec] of Object.entries(specs)) {
    const raw = given.get(name);
    if (raw === undefined) {
      if (spec.default !== undefined) values[name] = spec.default;
      continue;
    }
    const value = convert(name, spec, raw);
    if (spec.enum && !spec.enum.includes(value)) {
      throw new InputError(`input "${name}" must be ${listOr(spec.enum)}${about(spec)}; got ${JSON.stringify(raw)}`);
    }
    values[name] = value;
  }
  return values;
}

function convert(name: string, spec: InputSpec, raw: string): Scalar {
  const wrong = (expected: string) => new InputError(`input "${name}" must be ${expected}${about(spec)}; got ${JSON.stringify(raw)}`);
  switch (spec.type) {
    case 'string':
      return raw;
    case 'integer':
      if (!/^-?\d+$/.test(raw.trim())) throw wrong('a whole number');
      return Number(raw);
    case 'number': {
      const n = raw.trim() === '' ? NaN : Number(raw);
      if (!Number.isFinite(n)) throw wrong('a number');
      return n;
    }
    case 'boolean':
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      throw wrong('true or false');
  }
}

function about(spec: InputSpec): string {
  return spec.description ? ` (${spec.description})` : '';
}

/** `INPUT_PR` for input `pr`: how inputs reach setup steps' shells. */
export function inputEnvName(name: string): string {
  return `INPUT_${name.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}`;
}
