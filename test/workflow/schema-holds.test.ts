import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import validate from '../../generated/workflow-validator.js';
import rules from '../../generated/workflow-rules.json' with { type: 'json' };
import { SchemaWalk } from '../../src/workflow/schema-holds.js';
import { ROOT } from '../helpers/cli.js';
import { mutateJson, random } from '../helpers/random.js';

/**
 * The schema's walk (src/workflow/schema-holds.ts) decides alone only what it accepts: it must
 * never accept what ajv's validator refuses, and must accept what ajv accepts, or every valid
 * workflow pays for ajv again. Checked on every workflow of the repository and on seeded
 * mutations of them (FUZZ_SEED=N repeats a run).
 */
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
