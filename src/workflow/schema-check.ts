import type { ErrorObject } from 'ajv';
import rules from '../../generated/workflow-rules.json' with { type: 'json' };
import { SchemaWalk } from './schema-holds.js';
import type { Diagnostic } from './diagnostic.js';
import type { Path, WorkflowSource } from './source.js';
import { closest, describeValue, didYouMean, listOr, quote } from './suggest.js';

/** Plain words for the schema's name patterns. */
const PATTERN_WORDS: Record<string, string> = {
  '^[a-z0-9][a-z0-9-]*$': 'lowercase letters, digits and dashes, starting with a letter or digit',
  '^[A-Za-z_][A-Za-z0-9_-]*$': 'letters, digits, _ and -, starting with a letter or _',
  '^[A-Za-z_][A-Za-z0-9_]*$': 'letters, digits and _, starting with a letter or _',
  '^[A-Za-z0-9][A-Za-z0-9_-]*$': 'letters, digits, _ and -, starting with a letter or digit',
};

/** What a value of a `$defs` type looks like, for errors on values that match none of its forms. */
const DEF_WORDS: Record<string, string> = {
  duration: 'a duration such as 30s, 15m or 1h, or a number of seconds',
  size: 'a size such as 65536, 64KB or 1MB',
  sandbox: 'auto, required or off, or a mapping { mode, network }',
  thinking: 'adaptive, off, or a number of thinking tokens (at least 1024)',
};

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
  null: 'empty',
};

const NAME_OF_KEYS: Record<string, string> = {
  agents: 'agent name',
  inputs: 'input name',
  outputs: 'output name',
  env: 'environment variable name',
};

const schema = new SchemaWalk(rules);

/**
 * Checks the parsed document against schemas/workflow.schema.json, in plain words. A workflow the
 * schema's walk accepts is done; any other is judged by ajv's validator, loaded only then.
 */
export async function schemaErrors(source: WorkflowSource, data: unknown): Promise<Diagnostic[]> {
  if (schema.holds(data)) return [];
  const { default: validate } = await import('../../generated/workflow-validator.js');
  if (validate(data)) return [];
  const errors = validate.errors ?? [];
  const failedUnions = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const out: Diagnostic[] = [];
  for (const error of errors) {
    const path = pointerToPath(error.instancePath);
    if (isExplainedByTypo(error, errors) || error.keyword === 'if') continue;
    if (error.keyword === 'anyOf') {
      out.push(unionError(source, error, path));
    } else if (!failedUnions.has(error.instancePath) && error.keyword !== 'propertyNames') {
      out.push(keywordError(source, error, path));
    }
  }
  // A meta-schema may report one fault twice (through $dynamicRef): say it once.
  return out.filter((d, i) => out.findIndex((o) => o.line === d.line && o.col === d.col && o.message === d.message) === i);
}

function keywordError(source: WorkflowSource, e: ErrorObject, path: Path): Diagnostic {
  const label = labelOf(path);
  const found = describeValue(e.data);
  // `cache: 5m` for the prompt cache's ttl: the key takes a mapping, and the fix is one line.
  if (path.length === 1 && path[0] === 'cache' && e.keyword === 'type' && (e.data === '5m' || e.data === '1h')) {
    return source.error(source.valuePosition(path), `cache must be a mapping; found ${found}: write cache: { ttl: ${String(e.data)} }`);
  }
  if (path.length === 2 && path[0] === 'outputs' && e.keyword === 'type') {
    return source.error(source.valuePosition(path), `${label} must be an expression (a string) or a typed declaration (a mapping with a type); found ${found}`);
  }
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(params.additionalProperty);
      const allowed = Object.keys((e.parentSchema?.properties as object | undefined) ?? {});
      const where = path.length === 0 ? '' : ` in ${label}`;
      return source.error(source.keyPosition([...path, key]), `unknown key "${key}"${where}${didYouMean(key, allowed)}`);
    }
    case 'required': {
      const owner = path.length === 0 ? 'the workflow' : label;
      const at = path.length === 0 ? { line: 1, col: 1 } : source.keyPosition(path);
      return source.error(at, `${owner} needs the key "${String(params.missingProperty)}"`);
    }
    case 'type': {
      const types = String(params.type).split(',');
      const expected = types.map((t) => (types.length > 1 && t === 'boolean' ? 'a boolean' : (TYPE_WORDS[t] ?? t)));
      const words = expected.length > 1 ? `${expected.slice(0, -1).join(', ')} or ${expected.at(-1)}` : expected[0];
      return source.error(source.valuePosition(path), `${label} must be ${words}; found ${found}${misplacedAgentKey(source, path)}`);
    }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]) ?? [];
      const hint = typeof e.data === 'string' ? didYouMean(e.data, allowed.map(String)) : '';
      return source.error(
        source.valuePosition(path),
        `${label} must be ${allowed.length > 2 ? `one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : listOr(allowed)}; found ${found}${hint}`,
      );
    }
    case 'pattern': {
      const words = PATTERN_WORDS[String(params.pattern)] ?? `of the form ${String(params.pattern)}`;
      if (e.propertyName !== undefined) {
        const noun = NAME_OF_KEYS[String(path[path.length - 1])] ?? 'key';
        return source.error(source.keyPosition([...path, e.propertyName]), `${noun} ${quote(e.propertyName)} must be ${words}`);
      }
      return source.error(source.valuePosition(path), `${label} must be ${words}; found ${quote(e.data)}`);
    }
    case 'minimum':
      return source.error(source.valuePosition(path), `${label} must be at least ${params.limit}; found ${e.data}`);
    case 'exclusiveMinimum':
      return source.error(source.valuePosition(path), `${label} must be more than ${params.limit}; found ${e.data}`);
    case 'maximum':
      return source.error(source.valuePosition(path), `${label} must be at most ${params.limit}; found ${e.data}`);
    case 'minLength':
      return source.error(source.valuePosition(path), `${label} must not be empty`);
    case 'minProperties':
      return source.error(
        source.valuePosition(path),
        path.length === 1 && path[0] === 'agents' ? 'agents must name at least one agent' : `${label} must not be empty`,
      );
    case 'minItems':
      return source.error(source.valuePosition(path), `${label} must list at least ${params.limit} value${params.limit === 1 ? '' : 's'}`);
    case 'uniqueItems': {
      const second = Math.max(Number(params.i), Number(params.j));
      const items = e.data as unknown[];
      return source.error(source.valuePosition([...path, second]), `${label} lists ${quote(items[second])} twice`);
    }
    default:
      return source.error(source.valuePosition(path), `${label} ${e.message ?? 'is not valid'}`);
  }
}

/**
 * `agents.tools` (a key of an agent, one indent too far out): says which agent it likely belongs
 * to, the one written just before it.
 */
function misplacedAgentKey(source: WorkflowSource, path: Path): string {
  if (path.length !== 2 || path[0] !== 'agents' || !AGENT_KEYS.includes(String(path[1]))) return '';
  const agents = Object.keys((source.doc.toJS() as { agents?: object }).agents ?? {});
  const before = agents[agents.indexOf(String(path[1])) - 1];
  return `; "${path[1]}" is a key of an agent: indent it under the agent it belongs to${before ? ` (agents.${before}?)` : ''}`;
}

const AGENT_KEYS = [
  'role',
  'reports_to',
  'description',
  'model',
  'max_tokens',
  'effort',
  'thinking',
  'thinking_display',
  'system',
  'system_file',
  'tools',
  'wake',
];

/** A missing key that an unknown key beside it is a typo of: the "did you mean" says it all. */
function isExplainedByTypo(error: ErrorObject, errors: readonly ErrorObject[]): boolean {
  if (error.keyword !== 'required') return false;
  const missing = String(error.params.missingProperty);
  return errors.some(
    (e) => e.keyword === 'additionalProperties' && e.instancePath === error.instancePath && closest(String(e.params.additionalProperty), [missing]) === missing,
  );
}

/** A union of JSON Schema's own meta-schema, met in a typed output's declaration. */
const META_WORDS: Record<string, string> = {
  type: 'a JSON Schema type (string, number, integer, boolean, object, array or null), or a list of them',
};

function unionError(source: WorkflowSource, e: ErrorObject, path: Path): Diagnostic {
  const def = /#\/\$defs\/(\w+)\/anyOf$/.exec(e.schemaPath)?.[1];
  const meta = path[0] === 'outputs' ? /^#\/properties\/(\w+)\/anyOf$/.exec(e.schemaPath)?.[1] : undefined;
  const words = (def && DEF_WORDS[def]) ?? (meta && META_WORDS[meta]) ?? 'of another form';
  return source.error(source.valuePosition(path), `${labelOf(path)} must be ${words}; found ${describeValue(e.data)}`);
}

/** `agents.lead.tools[1]` */
export function labelOf(path: Path): string {
  let label = '';
  for (const segment of path) {
    if (typeof segment === 'number') label += `[${segment}]`;
    else label += label === '' ? segment : `.${segment}`;
  }
  return label || 'the workflow';
}

function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}
