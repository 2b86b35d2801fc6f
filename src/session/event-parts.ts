import { agentName, voterName, array, boolean, integer, json, nullable, number, object, oneOf, optional, record, string, text, type Schema } from './schema.js';

/** The parts several session lines share (session-events.ts): the header, limits, a message, a proposal, usage, a response. */

export const anyObject = (): Schema<Record<string, unknown>> => ({ ...record(json()), doc: 'object', problem: record(json()).problem });

export const HEADER = object({
  type: oneOf('header'),
  format: integer(),
  run_id: string(),
  conclave_version: string(),
  workflow: object({ path: text(), sha256: string() }),
  inputs: anyObject(),
  secret_checks: optional(record(string())),
  session: string(),
  started_at: string(),
  forked_from: optional(object({ path: string(), seq: integer() })),
  note: optional(string()),
  github: optional(object({ repository: string(), commit: string(), pull_request: optional(integer()), head: optional(string()) })),
  trust: optional(object({ untrusted: boolean(), why: string(), own: optional(array(string())) })),
  event: optional(object({ event_name: string(), title: string(), body: string(), comment: string(), author: string() })),
  workspace: optional(text()),
});

export const LIMITS = object({
  timeoutMs: number(),
  maxTurns: integer(),
  maxTurnsPerAgent: integer(),
  budgetUsd: number(),
  maxTokensTotal: nullable(number()),
  concurrency: integer(),
  maxEstimateUsd: optional(number()),
});

export const MESSAGE = object({ id: integer(), kind: string(), sender: agentName(), text: string(), recipients: array(agentName()) });

export const PROPOSAL = object({
  id: string(),
  proposer: agentName(),
  question: string(),
  options: array(string()),
  voters: array(voterName()),
  rule: string(),
  quorum: integer(),
  deadline_turns: nullable(integer()),
  opened_at_turn: integer(),
  deadline_ms: optional(integer()),
  action: optional(object({ tool: string(), input: anyObject() })),
  advisers: optional(array(agentName())),
});

const TOKENS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;
export const USAGE = object({ input_tokens: integer(), output_tokens: integer(), cache_creation_input_tokens: integer(), cache_read_input_tokens: integer() });
const API_USAGE = object(
  Object.fromEntries(TOKENS.map((t) => [t, optional(nullable(integer()))])) as Record<(typeof TOKENS)[number], Schema<number | null> & { optional: true }>,
);

/** A model's response as the API sent it: every field and content block is kept verbatim (unnamed fields pass unchecked). */
export const RESPONSE = object({ content: array(object({ type: string() })), stop_reason: nullable(string()), usage: optional(API_USAGE) });

export const MCP_TOOL = object({ name: string(), description: string(), input_schema: anyObject(), read_only: boolean() });
export const AGENT_TURN = { agent: agentName(), turn: integer() };

/** One row of an `estimate` event: an agent, a for_each or a template (engine/estimate/estimate.ts). */
export const ESTIMATE_ROW = object({
  name: string(),
  kind: oneOf('agent', 'for_each', 'template'),
  instances: nullable(integer()),
  worst_usd: number(),
  likely_usd: number(),
  calls: integer(),
  cached_tokens: integer(),
  batched: boolean(),
  counted: oneOf('exact', 'length'),
  turns_from: oneOf('sessions', 'messages'),
});
