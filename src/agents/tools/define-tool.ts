import { ChannelError } from '../../channel/channel-error.js';
import { ToolInputError, type AgentTool, type ToolContext, type ToolResult } from './tool.js';

/**
 * One field of a tool's input: the JSON Schema the model sees, and the parser that holds the
 * model to it. A tool's input is declared once (`defineTool`), so the two cannot drift apart.
 */
export interface Field<T> {
  readonly schema: Record<string, unknown>;
  readonly required: boolean;
  parse(value: unknown, name: string): T;
}

function field<T>(schema: Record<string, unknown>, parse: (value: unknown, name: string) => T): Field<T> & { optional(): Field<T | undefined> } {
  const required: Field<T> = { schema, required: true, parse };
  return {
    ...required,
    optional: () => ({ schema, required: false, parse: (value, name) => (value === undefined ? undefined : parse(value, name)) }),
  };
}

const described = (description: string | undefined) => (description === undefined ? {} : { description });

/** The fields a tool's input may have. Bad values are ToolInputErrors: tool results the model reads. */
export const input = {
  string(o: { description?: string; enum?: readonly string[] } = {}) {
    return field<string>({ type: 'string', ...(o.enum ? { enum: [...o.enum] } : {}), ...described(o.description) }, (value, name) => {
      if (typeof value !== 'string') throw new ToolInputError(`"${name}" must be a string`);
      if (o.enum && !o.enum.includes(value)) throw new ToolInputError(`${name} must be one of ${o.enum.join(', ')}; got ${JSON.stringify(value)}`);
      return value;
    });
  },
  /** A number the model gives as a whole number (the schema says integer; bounds are the tool's to apply). */
  integer(o: { description?: string; minimum?: number; maximum?: number } = {}) {
    const bounds = { ...(o.minimum === undefined ? {} : { minimum: o.minimum }), ...(o.maximum === undefined ? {} : { maximum: o.maximum }) };
    return field<number>({ type: 'integer', ...bounds, ...described(o.description) }, (value, name) => {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new ToolInputError(`"${name}" must be a number`);
      return value;
    });
  },
  /** A number, such as dollars (the schema's `number`). */
  number(o: { description?: string; exclusiveMinimum?: number } = {}) {
    const bound = o.exclusiveMinimum === undefined ? {} : { exclusiveMinimum: o.exclusiveMinimum };
    return field<number>({ type: 'number', ...bound, ...described(o.description) }, (value, name) => {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new ToolInputError(`"${name}" must be a number`);
      if (o.exclusiveMinimum !== undefined && value <= o.exclusiveMinimum) throw new ToolInputError(`"${name}" must be more than ${o.exclusiveMinimum}`);
      return value;
    });
  },
  boolean(o: { description?: string } = {}) {
    // Only `true` counts: anything else is false, as a flag the model may leave out.
    return field<boolean>({ type: 'boolean', ...described(o.description) }, (value) => value === true);
  },
  /** A tool call named as data: `{ tool, input }` (a proposal's action, docs/security.md: untrusted content). */
  action(o: { description?: string } = {}) {
    return field<{ tool: string; input: Record<string, unknown> }>(
      {
        type: 'object',
        properties: { tool: { type: 'string' }, input: { type: 'object' } },
        required: ['tool', 'input'],
        ...described(o.description),
      },
      (value, name) => {
        const v = value as { tool?: unknown; input?: unknown } | null;
        if (v === null || typeof v !== 'object' || typeof v.tool !== 'string' || v.tool === '')
          throw new ToolInputError(`"${name}" must be { "tool": NAME, "input": {…} }`);
        if (v.input === null || typeof v.input !== 'object' || Array.isArray(v.input)) throw new ToolInputError(`"${name}.input" must be an object`);
        return { tool: v.tool, input: v.input as Record<string, unknown> };
      },
    );
  },
  strings(o: { description?: string; minItems?: number } = {}) {
    return field<string[]>(
      { type: 'array', items: { type: 'string' }, ...(o.minItems === undefined ? {} : { minItems: o.minItems }), ...described(o.description) },
      (value, name) => {
        if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw new ToolInputError(`"${name}" must be a list of strings`);
        if (o.minItems !== undefined && value.length < o.minItems)
          throw new ToolInputError(`"${name}" needs at least ${o.minItems} item${o.minItems === 1 ? '' : 's'}`);
        return value as string[];
      },
    );
  },
};

type Shape = Record<string, Field<unknown>>;
export type Parsed<S extends Shape> = { [K in keyof S]: S[K] extends Field<infer T> ? T : never };

export interface ToolSpec<S extends Shape> {
  name: string;
  description: string;
  /** Re-running it cannot change anything; resume re-runs only such tools. */
  readOnly: boolean;
  /** It acts outside the run (on the workspace); see AgentTool. */
  external: boolean;
  input: S;
  run(input: Parsed<S>, context: ToolContext): ToolResult | Promise<ToolResult>;
}

/**
 * A tool from one declaration: the schema the model sees is made from `input`, and what the model
 * sends is parsed by the same fields before `run` sees it. A bad input, a ToolInputError or a
 * ChannelError that `run` throws, or a file system's error, comes back as a tool error; anything
 * else is a bug.
 */
export function defineTool<S extends Shape>(spec: ToolSpec<S>): AgentTool {
  const properties = Object.fromEntries(Object.entries(spec.input).map(([name, f]) => [name, f.schema]));
  const required = Object.entries(spec.input)
    .filter(([, f]) => f.required)
    .map(([name]) => name);
  return {
    readOnly: spec.readOnly,
    external: spec.external,
    definition: { name: spec.name, description: spec.description, input_schema: { type: 'object', properties, ...(required.length ? { required } : {}) } },
    run: async (raw, context) => {
      try {
        const parsed = Object.fromEntries(Object.entries(spec.input).map(([name, f]) => [name, f.parse(raw[name], name)])) as Parsed<S>;
        return await spec.run(parsed, context);
      } catch (e) {
        if (e instanceof ToolInputError || e instanceof ChannelError) return { content: e.message, isError: true };
        // A file system's refusal (EACCES, ENOSPC, …) is the tool's answer too.
        const code = (e as NodeJS.ErrnoException).code;
        if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return { content: `${code}: ${(e as Error).message}`, isError: true };
        throw e;
      }
    },
  };
}
