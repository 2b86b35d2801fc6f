import { PERSON } from './person.js';
/**
 * A small schema language for the session file: one definition per event yields its TypeScript
 * type (`Infer`), the reader's check (`problem`) and the words of docs/session-format.md (`doc`).
 * Unknown fields pass (a newer conclave may add them); the check names the first field that is
 * wrong, with its path.
 */
export interface Schema<T> {
  /** What is wrong with `value`, in words, or undefined when it fits. */
  problem(value: unknown, path: string): string | undefined;
  /** The kind of value, as the reference shows it. */
  readonly doc: string;
  readonly optional?: boolean;
  /** Only carries the type. */
  readonly _type?: T;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

type Fields = Record<string, Schema<unknown>>;
type OptionalKeys<F extends Fields> = { [K in keyof F]: F[K] extends { optional: true } ? K : never }[keyof F];
type Flat<T> = { [K in keyof T]: T[K] } & {};
export type ObjectOf<F extends Fields> = Flat<
  { -readonly [K in Exclude<keyof F, OptionalKeys<F>>]: Infer<F[K]> } & { -readonly [K in OptionalKeys<F>]?: Infer<F[K]> }
>;

export interface ObjectSchema<F extends Fields> extends Schema<ObjectOf<F>> {
  readonly fields: F;
}

function leaf<T>(doc: string, words: string, fits: (v: unknown) => boolean): Schema<T> {
  return { doc, problem: (v, path) => (fits(v) ? undefined : `"${path}" must be ${words}; found ${found(v)}`) };
}

export const string = (): Schema<string> => leaf('string', 'a string', (v) => typeof v === 'string');
/** A string with at least one character. */
export const text = (): Schema<string> => leaf('string', 'a non-empty string', (v) => typeof v === 'string' && v !== '');
/**
 * An agent's name as a workflow or a spawn can make one (letters, digits, `_` and `-`, at most 128):
 * a name read from a session file reaches Markdown, Mermaid and terminals, so nothing else passes.
 */
const AGENT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$/;
export const agentName = (): Schema<string> =>
  leaf('agent name', 'an agent name (letters, digits, _ and -)', (v) => typeof v === 'string' && AGENT_NAME.test(v));
/** A proposal's voter: an agent, or a person or team (person.ts). */
export const voterName = (): Schema<string> =>
  leaf('voter', 'an agent name, @login or @org/team', (v) => typeof v === 'string' && (AGENT_NAME.test(v) || PERSON.test(v)));
export const integer = (): Schema<number> => leaf('integer', 'a whole number', (v) => Number.isSafeInteger(v));
export const number = (): Schema<number> => leaf('number', 'a number', (v) => typeof v === 'number' && Number.isFinite(v));
export const boolean = (): Schema<boolean> => leaf('boolean', 'true or false', (v) => typeof v === 'boolean');
/** Any JSON value. */
export const json = (): Schema<unknown> => leaf('any', 'present', (v) => v !== undefined);

/** A string whose value is one of `values` in this version, any string in a later one. */
export function oneOf<const L extends string>(...values: L[]): Schema<L> {
  return { ...string(), doc: values.map((v) => `\`${v}\``).join(', ') } as Schema<L>;
}

export function array<T>(item: Schema<T>): Schema<T[]> {
  return {
    doc: `${item.doc}[]`,
    problem(v, path) {
      if (!Array.isArray(v)) return `"${path}" must be a list; found ${found(v)}`;
      for (let i = 0; i < v.length; i++) {
        const problem = item.problem(v[i], `${path}[${i}]`);
        if (problem) return problem;
      }
      return undefined;
    },
  };
}

/** An object whose values all fit `value`. */
export function record<T>(value: Schema<T>): Schema<Record<string, T>> {
  return {
    doc: `{ string: ${value.doc} }`,
    problem(v, path) {
      if (!isObject(v)) return `"${path}" must be an object; found ${found(v)}`;
      for (const [key, item] of Object.entries(v)) {
        const problem = value.problem(item, `${path}.${key}`);
        if (problem) return problem;
      }
      return undefined;
    },
  };
}

export function object<const F extends Fields>(fields: F): ObjectSchema<F> {
  const entries = Object.entries(fields);
  return {
    fields,
    doc: `{ ${entries.map(([name, s]) => `${name}${s.optional ? '?' : ''}: ${s.doc}`).join(', ')} }`,
    problem(v, path) {
      if (!isObject(v)) return `"${path}" must be an object; found ${found(v)}`;
      for (const [name, schema] of entries) {
        const value = v[name];
        if (value === undefined && schema.optional) continue;
        const problem = schema.problem(value, path === '' ? name : `${path}.${name}`);
        if (problem) return problem;
      }
      return undefined;
    },
  };
}

export function nullable<T>(schema: Schema<T>): Schema<T | null> {
  return {
    doc: `${schema.doc} or null`,
    problem: (v, path) => {
      if (v === null) return undefined;
      const problem = schema.problem(v, path);
      // "or null" belongs to this field's own problem, not to one of a field inside it.
      return problem?.startsWith(`"${path}" must be`) ? problem.replace(/; found/, ' or null; found') : problem;
    },
  };
}

export function optional<T>(schema: Schema<T>): Schema<T> & { optional: true } {
  return { ...schema, optional: true };
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function found(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v).slice(0, 40)}`;
}
