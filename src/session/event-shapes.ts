import type { EventType } from './format.js';

/**
 * What each event type must hold, checked when a session file is read, so that no command meets
 * a field of the wrong kind later. `?` marks a field that may be missing; `|null` one that may
 * be null. Unknown fields are allowed (a newer conclave may add them).
 */
type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'string[]' | 'integer[]' | 'any';
interface Shape {
  [field: string]: `${Kind}${'' | '|null'}${'' | '?'}` | Shape;
}

const LIMITS: Shape = {
  timeoutMs: 'number',
  maxTurns: 'integer',
  maxTurnsPerAgent: 'integer',
  budgetUsd: 'number',
  maxTokensTotal: 'number|null',
  concurrency: 'integer',
};
const AGENT_TURN = { agent: 'string', turn: 'integer' } as const;

const SHAPES: Record<EventType, Shape> = {
  run_started: { workflow: 'string', limits: LIMITS },
  limits_changed: { limits: LIMITS, changed: 'string[]' },
  setup_finished: { id: 'string', stdout: 'string' },
  setup_failed: { id: 'string', error: 'string' },
  mcp_tools: { server: 'string', tools: 'array' },
  message: { message: { id: 'integer', kind: 'string', sender: 'string', text: 'string', recipients: 'string[]' } },
  ack: { agent: 'string', through: 'integer' },
  proposal_opened: {
    proposal: {
      id: 'string',
      proposer: 'string',
      question: 'string',
      options: 'string[]',
      voters: 'string[]',
      rule: 'string',
      quorum: 'integer',
      deadline_turns: 'integer|null',
      opened_at_turn: 'integer',
    },
  },
  vote: { proposal: 'string', voter: 'string', option: 'string', reason: 'string' },
  proposal_closed: { proposal: 'string', status: 'string', winner: 'string|null', reason: 'string|null' },
  turn_counted: { agent: 'string' },
  turn_started: { ...AGENT_TURN, through: 'integer', messages: 'integer[]' },
  model_call: {
    ...AGENT_TURN,
    step: 'integer',
    request: 'object',
    request_sha256: 'string',
    response: { content: 'array', stop_reason: 'string|null', usage: 'object?' },
    cost_usd: 'number',
    cached: 'boolean?',
  },
  context_exceeded: { ...AGENT_TURN, step: 'integer', error: 'string' },
  context_compacted: {
    ...AGENT_TURN,
    reason: 'string',
    tokens_before: 'integer',
    tokens_after: 'integer',
    cleared: 'integer',
    summary: 'string|null',
    left_out: 'integer',
  },
  tool_call: { ...AGENT_TURN, tool: 'string', tool_use_id: 'string', input: 'any' },
  tool_result: { ...AGENT_TURN, tool: 'string', tool_use_id: 'string', content: 'string', is_error: 'boolean' },
  turn_ended: { ...AGENT_TURN, elapsed_ms: 'number' },
  turn_failed: { ...AGENT_TURN, error: 'string' },
  run_ended: { status: 'string', exit_code: 'integer', reason: 'string', summary: 'string', outputs: 'object', output_errors: 'string[]?', usage: 'object?' },
  resumed: { replayed_through: 'integer', at: 'string', conclave_version: 'string' },
  repair: { torn_bytes: 'integer', kept: 'string?' },
};

/** Whether `type` is an event this version knows (others are skipped when read). */
export function isKnownType(type: string): type is EventType {
  return Object.hasOwn(SHAPES, type);
}

/** What is wrong with a known event's fields, in words, or undefined when it has the right shape. */
export function shapeProblem(event: Record<string, unknown>, type: EventType): string | undefined {
  return check(event, COMPILED[type], '');
}

/** A shape's fields parsed once: resume checks every event of a long session. */
interface Field {
  name: string;
  kind: Kind;
  nullable: boolean;
  optional: boolean;
  inner?: Field[];
}

function compile(shape: Shape): Field[] {
  return Object.entries(shape).map(([name, want]) => {
    if (typeof want !== 'string') return { name, kind: 'object', nullable: false, optional: false, inner: compile(want) };
    const [kind, nullable] = want.replace(/\?$/, '').split('|') as [Kind, string | undefined];
    return { name, kind, nullable: nullable !== undefined, optional: want.endsWith('?') };
  });
}

const COMPILED = Object.fromEntries(Object.entries(SHAPES).map(([type, shape]) => [type, compile(shape)])) as Record<EventType, Field[]>;

function check(value: Record<string, unknown>, fields: readonly Field[], path: string): string | undefined {
  for (const field of fields) {
    const v = value[field.name];
    if (field.inner) {
      if (!isObject(v)) return `"${path}${field.name}" must be an object`;
      const inner = check(v, field.inner, `${path}${field.name}.`);
      if (inner) return inner;
      continue;
    }
    if (v === undefined && field.optional) continue;
    if (v === null && field.nullable) continue;
    if (!fits(v, field.kind)) return `"${path}${field.name}" must be ${describe(field.kind)}${field.nullable ? ' or null' : ''}; found ${found(v)}`;
  }
  return undefined;
}

function fits(v: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'any':
      return v !== undefined;
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return Number.isSafeInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'object':
      return isObject(v);
    case 'array':
      return Array.isArray(v);
    case 'string[]':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'integer[]':
      return Array.isArray(v) && v.every((x) => Number.isSafeInteger(x));
  }
}

function describe(kind: Kind): string {
  const words: Record<Kind, string> = {
    any: 'present',
    string: 'a string',
    integer: 'a whole number',
    number: 'a number',
    boolean: 'true or false',
    object: 'an object',
    array: 'a list',
    'string[]': 'a list of strings',
    'integer[]': 'a list of whole numbers',
  };
  return words[kind];
}

function found(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v).slice(0, 40)}`;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
