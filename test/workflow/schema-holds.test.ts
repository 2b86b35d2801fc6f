import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import validate from '../../generated/workflow-validator.js';
import rules from '../../generated/workflow-rules.json' with { type: 'json' };
import { SchemaWalk } from '../../src/workflow/schema-holds.js';
import { mutateJson, random } from '../helpers/random.js';

/**
 * The schema's walk (src/workflow/schema-holds.ts) decides alone only what it accepts: it must
 * never accept what ajv's validator refuses, and must accept what ajv accepts, or every valid
 * workflow pays for ajv again. Checked on every workflow of the repository and on seeded
 * mutations of them (FUZZ_SEED=N repeats a run).
 */
// Not helpers/cli.js's ROOT: that module refuses a build older than the sources, and this test runs no CLI (Stryker mutates the sources).
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 4000;

const walk = new SchemaWalk(rules);

const workflows = [
  ...readdirSync(join(ROOT, 'examples'))
    .filter((f) => f.endsWith('.yml') && !f.endsWith('.test.yml'))
    .map((f) => join(ROOT, 'examples', f)),
  ...readdirSync(join(ROOT, 'test/corpus'))
    .filter((f) => f.endsWith('.yml'))
    .map((f) => join(ROOT, 'test/corpus', f)),
].flatMap((file) => {
  try {
    return [{ file, data: parse(readFileSync(file, 'utf8')) as unknown }];
  } catch {
    return []; // a corpus file that is not YAML at all
  }
});

const valid = workflows.filter(({ data }) => validate(data));

/** Values that sit on the edges of the schema's keywords, as YAML gives them. */
const EDGES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  -1,
  1,
  1.5,
  2 ** 53 + 1,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.NaN,
  '',
  ' ',
  'x',
  'lead',
  'Lead',
  '-x',
  '1m',
  '30s',
  '64KB',
  'adaptive',
  'manager',
  'worker',
  '😀',
  '😀😀',
  '\ud83d',
  'a\nb',
  '$<< inputs.x >>',
  'read_file',
  '@org/team',
  '@someone',
  [],
  [null],
  ['a', 'a'],
  [{ a: 1 }, { a: 1 }],
  ['read_file', 'grep'],
  {},
  { a: 1 },
  { role: 'worker' },
  { type: 'string' },
  { type: 'strin' },
  { __proto__: null, x: 1 },
];

/** Whether a parsed workflow declares a typed output: those the walk leaves to ajv (JSON Schema's meta-schema). */
const typedOutputs = (data: unknown): boolean => {
  const outputs = (data as { outputs?: unknown } | null)?.outputs;
  return typeof outputs === 'object' && outputs !== null && Object.values(outputs).some((o) => typeof o === 'object' && o !== null);
};

const KEYS = ['extra', 'rol', 'role', 'description', 'type', 'system', 'tools', 'for_each', '__proto__', 'constructor'];

/** Every mapping and list inside a value, the value too. */
function containers(value: unknown, found: object[] = []): object[] {
  if (typeof value === 'object' && value !== null) {
    found.push(value);
    for (const child of Object.values(value)) containers(child, found);
  }
  return found;
}

/** One change of a kind mutateJson does not make: a key put into a mapping, or a piece of the file moved elsewhere. */
function graft(data: unknown, rand: () => number, edge: () => unknown): void {
  const places = containers(data);
  const target = places[Math.floor(rand() * places.length)];
  if (!target || Array.isArray(target)) return;
  const key = KEYS[Math.floor(rand() * KEYS.length)]!;
  const moved = rand() < 0.5 ? structuredClone(places[Math.floor(rand() * places.length)]) : edge();
  Object.defineProperty(target, key, { value: moved, enumerable: true, writable: true, configurable: true });
}

function verdicts(data: unknown) {
  return { ajv: validate(data), walk: walk.holds(data) };
}

describe(`the schema's walk against ajv (seed ${SEED})`, () => {
  it('accepts every valid workflow of the repository that declares no typed output, and refuses every invalid one', () => {
    let accepted = 0;
    for (const { file, data } of workflows) {
      const { ajv, walk: held } = verdicts(data);
      if (!ajv || typedOutputs(data)) expect(held, file).toBe(false);
      else expect(held, file).toBe(true);
      if (held) accepted++;
    }
    expect(accepted).toBeGreaterThanOrEqual(6); // the examples
  });

  it(`${CASES} mutated workflows: the walk never accepts what ajv refuses, and refuses what ajv accepts only for typed outputs`, () => {
    const rand = random(SEED);
    const pick = () => structuredClone(EDGES[Math.floor(rand() * EDGES.length)]);
    const counts = { both: 0, neither: 0 };
    for (let n = 0; n < CASES; n++) {
      // Most mutations of a valid example stay near valid: they try the walk where it decides alone.
      const from = rand() < 0.7 ? valid : workflows;
      const { data } = from[Math.floor(rand() * from.length)]!;
      const mutated = structuredClone(data);
      for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) {
        if (rand() < 0.3) graft(mutated, rand, pick);
        else mutateJson(mutated, rand, pick);
      }
      const { ajv, walk: held } = verdicts(mutated);
      const where = `case ${n} (seed ${SEED}): ${JSON.stringify(mutated).slice(0, 600)}`;
      if (held) expect(ajv, where).toBe(true);
      if (ajv && !typedOutputs(mutated)) expect(held, where).toBe(true);
      if (ajv && held) counts.both++;
      if (!ajv && !held) counts.neither++;
    }
    // Both sides are exercised: mutations that stay valid and mutations that break the file.
    expect(counts.both).toBeGreaterThan(CASES / 20);
    expect(counts.neither).toBeGreaterThan(CASES / 4);
  });

  it('leaves to ajv what it does not know: a keyword or a reference outside the file', () => {
    expect(new SchemaWalk({ type: 'string', format: 'email' }).holds('x')).toBe(false);
    expect(new SchemaWalk({ $ref: 'https://json-schema.org/draft/2020-12/schema' }).holds({})).toBe(false);
    expect(new SchemaWalk({ $ref: '#/$defs/missing' }).holds('x')).toBe(false);
    expect(new SchemaWalk({ type: 'array', uniqueItems: true }).holds(Array.from({ length: 1001 }, (_, i) => i))).toBe(false);
    expect(new SchemaWalk({ type: 'array', uniqueItems: true }).holds(Array.from({ length: 1000 }, (_, i) => i))).toBe(true);
  });
});

describe('each keyword the walk knows, as ajv reads it', () => {
  const Ajv = (Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020;
  const ajv = new Ajv({ strict: true, strictTypes: false, strictRequired: false, allowUnionTypes: true });
  const astral = '\u{1F600}';
  // [schema, values]: for every value, the walk accepts exactly what ajv accepts.
  const CASES: [object, unknown[]][] = [
    [{ type: 'null' }, [null, 0, '', false, {}]],
    [{ type: 'integer' }, [1, 1.5, -0, Number.POSITIVE_INFINITY, Number.NaN, '1', null]],
    [{ type: 'number' }, [1.5, Number.NEGATIVE_INFINITY, Number.NaN, '1.5']],
    [{ type: ['string', 'null'] }, ['x', null, 1]],
    [{ type: 'object' }, [{}, [], null, 'x']],
    [{ type: 'array' }, [[], {}, 'x']],
    [{ type: 'boolean' }, [true, 0, 'true']],
    [{ enum: ['a', 1, null] }, ['a', 1, null, 'b', '1']],
    [
      { enum: [{ a: [1, { b: 2 }] }, [1, 2]] },
      [{ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] }, { a: [1, { b: 2 }], c: 1 }, { b: 1 }, [1, 2], [2, 1], [1, 2, 3], {}],
    ],
    [{ enum: [[]] }, [[], {}]],
    [{ enum: [{}] }, [{}, []]],
    [{ minimum: 2, maximum: 4 }, [1, 2, 4, 5, 'x', Number.POSITIVE_INFINITY]],
    [{ exclusiveMinimum: 2 }, [2, 2.5, 'x']],
    [{ minLength: 2 }, ['a', 'ab', astral, astral + astral, 'x'.repeat(5), 7]],
    [{ minLength: 3 }, [astral + astral, astral + astral + astral, 'abc']],
    [{ pattern: '^[a-z]+$' }, ['abc', 'aBc', 1]],
    [{ minItems: 2, maxItems: 3 }, [[1], [1, 2], [1, 2, 3, 4], 'xx']],
    [{ uniqueItems: true }, [[1, 2], [1, 1], [{ a: 1 }, { a: 1 }], [{ a: 1 }, { a: 2 }], [[1], [1]], [Number.NaN, Number.NaN], 'xx']],
    [{ items: { type: 'string' } }, [['a'], ['a', 1], 'x']],
    [{ required: ['a'] }, [{ a: 1 }, { b: 1 }, [], 'x']],
    [{ properties: { a: { type: 'string' } } }, [{ a: 'x' }, { a: 1 }, {}, 'x']],
    [{ properties: { a: { type: 'string' } }, additionalProperties: false }, [{ a: 'x' }, { b: 1 }, {}]],
    [{ additionalProperties: { type: 'number' } }, [{ a: 1 }, { a: 'x' }]],
    [{ propertyNames: { pattern: '^a' } }, [{ ab: 1 }, { b: 1 }, {}]],
    [{ minProperties: 1 }, [{}, { a: 1 }, []]],
    [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, ['x', 1, null]],
    [{ oneOf: [{ type: 'number' }, { type: 'integer' }] }, [1, 1.5, 'x']],
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a promise
    [{ if: { type: 'string' }, then: { minLength: 2 }, else: { type: 'number' } }, ['ab', 'a', 1, null]],
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, not a promise
    [{ if: { type: 'string' }, then: { minLength: 2 } }, ['a', 'ab', null]],
    [{ if: { type: 'string' }, else: { type: 'number' } }, ['a', 1, null]],
    [{ $defs: { s: { type: 'string' } }, properties: { a: { $ref: '#/$defs/s' } } }, [{ a: 'x' }, { a: 1 }]],
    [
      { $defs: { 'a/b': { type: 'string' }, 'c~d': { type: 'number' } }, properties: { x: { $ref: '#/$defs/a~1b' }, y: { $ref: '#/$defs/c~0d' } } },
      [{ x: 's', y: 1 }, { x: 1 }, { y: 's' }],
    ],
    [{ description: 'annotated', title: 't', default: 1, examples: [1], $comment: 'c', type: 'number' }, [1, 'x']],
    [true, [1, null]],
    [{ not: { type: 'number' } }, ['x']], // not a keyword the walk knows: left to ajv, so never "holds"
  ];

  it.each(CASES.map(([schema, values]) => [JSON.stringify(schema), schema, values] as const))('%s', (_name, schema, values) => {
    const check = ajv.compile(schema);
    const walked = new SchemaWalk(schema as Record<string, unknown>);
    for (const value of values) {
      const known = typeof schema !== 'object' || !('not' in schema);
      expect(walked.holds(value), JSON.stringify(value) ?? String(value)).toBe(known && check(value));
    }
  });

  it('refuses a reference to what is no schema, and a schema with patternProperties (left to ajv)', () => {
    expect(new SchemaWalk({ $defs: { n: 3 }, $ref: '#/$defs/n' }).holds(1)).toBe(false);
    expect(new SchemaWalk({ $defs: { t: true }, $ref: '#/$defs/t' }).holds(1)).toBe(true);
    expect(new SchemaWalk({ $ref: '#/nowhere/x' }).holds(1)).toBe(false);
    expect(new SchemaWalk({ patternProperties: { '^a': true }, additionalProperties: false }).holds({ a: 1 })).toBe(false);
    expect(new SchemaWalk({ properties: { a: true }, additionalProperties: false }).holds('not an object')).toBe(true);
  });
});
