/**
 * Whether a parsed workflow surely satisfies the workflow schema, answered by walking the schema
 * (generated/workflow-rules.json: schemas/workflow.schema.json without its descriptions) instead of
 * running ajv's compiled validator, ~185 KB of code that every `validate` and `run` paid ~15 ms
 * to load and run (docs/BENCHMARKS.md). ajv stays the judge: anything but "holds" — a fault, a
 * keyword this walk does not know, a reference outside the file (a typed output checked against
 * JSON Schema's meta-schema) — is handed to it, and its errors are what the user reads. The
 * keywords follow ajv's semantics (strict numbers, unicode patterns and lengths, `undefined` as
 * absent); test/workflow/schema-holds.test.ts checks the two never disagree on "holds".
 */
export type Schema = boolean | { readonly [keyword: string]: unknown };

/** Keywords that only annotate: they hold for every value. */
const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'examples', 'default', 'deprecated']);

/** The keywords that apply to mappings only. */
const OBJECT_KEYWORDS = new Set(['properties', 'additionalProperties', 'required', 'propertyNames', 'minProperties']);

/** A list longer than this is left to ajv: uniqueItems compares every pair. */
const MOST_ITEMS_COMPARED = 1000;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** fast-deep-equal's equality, as ajv's enum and uniqueItems use it. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return Number.isNaN(a) && Number.isNaN(b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && same((a as Json)[key], (b as Json)[key]));
}

function hasType(value: unknown, type: unknown): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    case 'integer':
      return isNumber(value) && value % 1 === 0;
    case 'number':
      return isNumber(value);
    case 'string':
    case 'boolean':
      return typeof value === type;
    default:
      return false;
  }
}

/** A schema walker over one root: `holds(value)` is true only when ajv would accept the value too. */
export class SchemaWalk {
  private readonly patterns = new Map<string, RegExp>();

  constructor(private readonly root: Json) {}

  holds(value: unknown, schema: Schema = this.root): boolean {
    if (typeof schema === 'boolean') return schema;
    for (const [keyword, rule] of Object.entries(schema)) {
      if (!ANNOTATIONS.has(keyword) && !this.keywordHolds(keyword, rule, value, schema)) return false;
    }
    return true;
  }

  private keywordHolds(keyword: string, rule: unknown, value: unknown, schema: Json): boolean {
    switch (keyword) {
      case '$defs':
      case 'then':
      case 'else':
        return true; // read by $ref and by if
      case '$ref':
        return typeof rule === 'string' && this.holds(value, this.pointed(rule));
      case 'type':
        return Array.isArray(rule) ? rule.some((type) => hasType(value, type)) : hasType(value, rule);
      case 'enum':
        return Array.isArray(rule) && rule.some((option) => same(option, value));
      case 'anyOf':
        return Array.isArray(rule) && rule.some((option: Schema) => this.holds(value, option));
      case 'oneOf':
        return Array.isArray(rule) && rule.filter((option: Schema) => this.holds(value, option)).length === 1;
      case 'if':
        return this.conditionHolds(rule as Schema, value, schema);
      default:
        return this.valueKeywordHolds(keyword, rule, value, schema);
    }
  }

  private conditionHolds(condition: Schema, value: unknown, schema: Json): boolean {
    const branch = this.holds(value, condition) ? schema.then : schema.else;
    return branch === undefined || this.holds(value, branch as Schema);
  }

  /** The keywords that apply to one type of value and hold for every other. */
  private valueKeywordHolds(keyword: string, rule: unknown, value: unknown, schema: Json): boolean {
    switch (keyword) {
      case 'minimum':
        return !isNumber(value) || value >= Number(rule);
      case 'maximum':
        return !isNumber(value) || value <= Number(rule);
      case 'exclusiveMinimum':
        return !isNumber(value) || value > Number(rule);
      case 'minLength':
        // A code point is one or two UTF-16 units: a long string is counted only when it could fall short.
        return typeof value !== 'string' || value.length >= 2 * Number(rule) || [...value].length >= Number(rule);
      case 'pattern':
        return typeof value !== 'string' || this.pattern(String(rule)).test(value);
      case 'minItems':
        return !Array.isArray(value) || value.length >= Number(rule);
      case 'maxItems':
        return !Array.isArray(value) || value.length <= Number(rule);
      case 'uniqueItems':
        return !Array.isArray(value) || rule !== true || this.unique(value);
      case 'items':
        return !Array.isArray(value) || value.every((item) => this.holds(item, rule as Schema));
      default:
        return this.objectKeywordHolds(keyword, rule, value, schema);
    }
  }

  private objectKeywordHolds(keyword: string, rule: unknown, value: unknown, schema: Json): boolean {
    if (!OBJECT_KEYWORDS.has(keyword)) return false;
    if (!isObject(value)) return true;
    switch (keyword) {
      case 'properties':
        return Object.entries(rule as Record<string, Schema>).every(([key, property]) => value[key] === undefined || this.holds(value[key], property));
      case 'additionalProperties': {
        if (schema.patternProperties !== undefined) return false;
        const named = (schema.properties ?? {}) as Json;
        return Object.keys(value).every((key) => Object.hasOwn(named, key) || this.holds(value[key], rule as Schema));
      }
      case 'required':
        return Array.isArray(rule) && rule.every((key) => value[key as string] !== undefined);
      case 'propertyNames':
        return Object.keys(value).every((key) => this.holds(key, rule as Schema));
      default:
        return Object.keys(value).length >= Number(rule);
    }
  }

  /** The schema a `$ref` inside the file points to (`#/$defs/agent/properties/description`); `false` for any other, which ajv then judges. */
  private pointed(ref: string): Schema {
    if (!ref.startsWith('#/')) return false;
    let node: unknown = this.root;
    for (const part of ref.slice(2).split('/')) {
      const key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~');
      if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return false;
      node = (node as Json)[key];
    }
    return typeof node === 'boolean' || isObject(node) ? node : false;
  }

  private pattern(source: string): RegExp {
    let pattern = this.patterns.get(source);
    if (!pattern) {
      pattern = new RegExp(source, 'u');
      this.patterns.set(source, pattern);
    }
    return pattern;
  }

  private unique(items: readonly unknown[]): boolean {
    if (items.length > MOST_ITEMS_COMPARED) return false;
    return items.every((item, i) => items.findIndex((other) => same(other, item)) === i);
  }
}
