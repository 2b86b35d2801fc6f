import { END_STATUSES } from '../exit-codes.js';
import {
  agentName,
  voterName,
  array,
  boolean,
  integer,
  json,
  nullable,
  number,
  object,
  oneOf,
  optional,
  record,
  string,
  type ObjectSchema,
  type Schema,
} from './schema.js';

import { AGENT_TURN, anyObject, ESTIMATE_ROW, HEADER, LIMITS, MCP_TOOL, MESSAGE, PROPOSAL, RESPONSE, USAGE } from './event-parts.js';

export { HEADER, LIMITS, MESSAGE, PROPOSAL, RESPONSE, USAGE } from './event-parts.js';

/**
 * The session file's lines, each defined once: format.ts takes their types from here, the reader
 * checks every line against them, and docs/session-format.md's tables are made from them (a test
 * keeps the page equal to `sessionReference()`).
 */

interface EventDefinition<S extends ObjectSchema<Record<string, Schema<unknown>>>> {
  schema: S;
  /** What the event records, for the reference. */
  about: string;
}
const event = <const F extends Record<string, Schema<unknown>>>(fields: F, about: string): EventDefinition<ObjectSchema<F>> => ({
  schema: object(fields),
  about,
});

export const EVENTS = {
  run_started: event(
    { workflow: string(), limits: LIMITS, cache_ttl: optional(oneOf('1h')), shared_tools: optional(boolean()) },
    'the run began, with these limits (`timeoutMs`, `maxTurns`, `maxTurnsPerAgent`, `budgetUsd`, `maxTokensTotal` or null, `concurrency`, ' +
      'and `maxEstimateUsd` when given); ' +
      '`cache_ttl` when its prompt cache writes are kept an hour (`cache: { ttl: 1h }`), at that price; ' +
      "`shared_tools` (true) when the workflow has a `context:` and every agent's calls are sent the team's coordination tools as one list " +
      '(docs/pricing.md: one prefix for the whole team); a run recorded without it sent each agent its own',
  ),
  limits_changed: event(
    { limits: LIMITS, changed: array(string()) },
    'a resume raised limits (`--budget-usd`, `--max-turns`, `--max-turns-per-agent`, `--max-tokens-total`, `--timeout`): from here on the run has these ' +
      'limits; `changed` names the fields that changed',
  ),
  setup_finished: event({ id: string(), stdout: string() }, "a setup step's output; resume and replay use it instead of running the step"),
  setup_failed: event({ id: string(), error: string() }, 'a setup step failed: the run stopped'),
  mcp_tools: event(
    { server: string(), tools: array(MCP_TOOL) },
    "an MCP server's tools, listed when it started: a resume compares them, a replay uses them and starts no server; each call is a `tool_call` and " +
      "`tool_result` like a workspace tool's",
  ),
  message: event({ message: MESSAGE }, 'a channel message, with its recipients as resolved when written'),
  ack: event({ agent: agentName(), through: integer() }, "a finished turn handled the agent's inbox up to entry `through`"),
  proposal_opened: event(
    { proposal: PROPOSAL },
    "a proposal was opened; `advisers`: a decision that is the people's (`people.decide`), whose voters are the people, and the agents " +
      'whose votes on it are advice',
  ),
  vote: event({ proposal: string(), voter: voterName(), option: string(), reason: string() }, 'a vote the channel accepted'),
  human_vote: event(
    {
      proposal: string(),
      seat: voterName(),
      voter: string(),
      option: string(),
      reason: string(),
      digest: string(),
      comment: nullable(object({ id: integer(), url: string() })),
      permission: string(),
      at: string(),
    },
    "a person's vote, checked with GitHub when cast (docs/github-action.md: votes from people): `seat` the voter it fills; a `vote` follows",
  ),
  proposal_closed: event(
    { proposal: string(), status: oneOf('decided', 'no_decision', 'cancelled'), winner: nullable(string()), reason: nullable(string()) },
    'a proposal closed',
  ),
  turn_counted: event({ agent: agentName() }, 'a turn ended, for proposal deadlines'),
  agent_tainted: event(
    { agent: agentName(), why: string() },
    'the agent read text from outside the team, and is tainted for the rest of the run: its writes outside the run need consent ' +
      '(docs/security.md: untrusted content)',
  ),
  agent_ended: event(
    { agent: agentName(), status: oneOf('cancelled', 'limit', 'failed', 'stopped'), reason: string() },
    'a spawned agent ended: cancelled (the `cancel` tool; its turn in flight aborted), stopped by its own limit, or failed, its spawner told; or `stopped` ' +
      'with the run (written deepest first just before `run_ended`; a resume replays up to the first of them)',
  ),
  call_failed: event(
    { ...AGENT_TURN, step: integer(), error: string(), kind: oneOf('auth', 'outage', 'request', 'budget'), status: nullable(integer()) },
    "a spawned agent's model call failed for good (after retries), or was not made (`budget`: it would pass the budget_usd the agent was spawned with): " +
      'resume and replay meet the same at the same place, and the agent ends with `agent_ended`',
  ),
  agent_spawned: event(
    { agent: agentName(), template: string(), role: oneOf('manager', 'worker'), parent: agentName(), depth: integer() },
    '`parent` spawned `agent`, an instance of `template` (`(fork)` for a fork of `parent`), `depth` levels below a declared agent; the next event is its ' +
      'task, a message from `parent` to it',
  ),
  document_opened: event(
    { document: object({ name: string(), owner: agentName(), mode: oneOf('edit', 'append'), text: string() }) },
    "a document of the workflow's `documents:`, at version 1 with `text` (a `file:` as it was read when the run began: resume and replay use this)",
  ),
  document_changed: event(
    { document: string(), version: integer(), author: agentName(), text: string(), why: string(), edit: nullable(string()) },
    "`document` is now at `version`, whose whole text is `text`: its owner's edit (`edit` null), or edit `edit` by `author` that the owner accepted, " +
      'merged into the version then current',
  ),
  document_appended: event(
    { document: string(), version: integer(), author: agentName(), text: string() },
    '`author` added the entry `text` (ending with a newline) to an append document, now at `version`',
  ),
  edit_proposed: event(
    { edit: object({ id: string(), document: string(), author: agentName(), base: integer(), text: string(), why: string() }) },
    'an agent that does not own the document edited it against version `base`: edit `id` (`NAME#N`) waits for the owner, who is told with a unified diff',
  ),
  edit_closed: event(
    { edit: string(), status: oneOf('accepted', 'rejected', 'conflict'), reviewer: agentName(), why: string() },
    'the owner reviewed an edit: `accepted` (a `document_changed` follows, unless the merge changed nothing), `rejected`, or `conflict` (accepted, but it ' +
      'overlapped changes made since its base: not merged, its author told to edit again)',
  ),
  turn_started: event({ ...AGENT_TURN, through: integer(), messages: array(integer()) }, "an agent's turn began with these unread messages (ids)"),
  shared_text: event(
    { sha256: string(), text: string() },
    "a long block of a system prompt (the workflow's `context:`, or a long instruction beside it), kept once: a `model_call`'s `request.system` " +
      'writes it as `[shared_text SHA256]`; a note: resume and replay skip it',
  ),
  batch_creating: event(
    { custom_ids: array(string()) },
    'calls of agents with `batch: true` are about to be submitted as one message batch: written before the batch is created, so that a ' +
      'session whose process was killed meanwhile says that a batch may exist for them (a resume says so); a note: resume and replay skip it',
  ),
  batch_submitted: event(
    { batch_id: string(), custom_ids: array(string()) },
    "calls of agents with `batch: true` were submitted as message batch `batch_id`, each `custom_id` a request's `request_sha256`; written before " +
      'anything waits for it, so that a resumed run polls this batch instead of submitting them again; a note: resume and replay skip it',
  ),
  model_call: event(
    {
      ...AGENT_TURN,
      step: integer(),
      request: anyObject(),
      request_sha256: string(),
      response: RESPONSE,
      cost_usd: number(),
      cached: optional(boolean()),
      provider: optional(oneOf('bedrock', 'vertex', 'foundry')),
      batch: optional(string()),
      answered_by: optional(string()),
    },
    "one call and the API's full response; `request` holds the system prompt and tools when they change and the messages added since the agent's previous " +
      "call (`messages_from`), its model as the workflow names it; `request_sha256` is over the whole request and the provider; `step` numbers the turn's " +
      "calls, a compaction's summary call included; `cached` when the answer came from the shared cache; `provider` when the call went to a cloud rather " +
      "than Anthropic's API (docs/providers.md); `batch`, the message batch that answered it (`batch: true`, at the batch price); " +
      "`answered_by`, the model a server-side fallback answered with, when not the request's own (`fallbacks:`, priced as that model)",
  ),
  call_interrupted: event(
    { ...AGENT_TURN, step: integer(), cost_usd: number() },
    '`queue: interrupt`: call `step` was abandoned when a message arrived; its prompt is counted as paid (`cost_usd`, estimated from its size), and the call ' +
      'is made again with the message (a `steered` event)',
  ),
  call_abandoned: event(
    { ...AGENT_TURN, step: integer(), input_tokens: integer(), cost_usd: number(), why: oneOf('aborted', 'worker_lost') },
    "call `step`'s request had left when it was given up (`aborted`: the agent cancelled, the run stopped or timed out; `worker_lost`: its worker stopped " +
      'and the call was made again): its prompt is counted as paid (`input_tokens`, `cost_usd`, estimated from its size). A note: resume and replay skip it, ' +
      'and count its cost',
  ),
  steered: event(
    { ...AGENT_TURN, step: integer(), through: integer(), messages: array(integer()) },
    '`queue: steer`: messages that arrived during the turn (ids) joined it at call `step`; the turn handles its inbox up to entry `through`',
  ),
  rate_waited: event(
    { ...AGENT_TURN, step: integer(), waited_ms: number(), reason: oneOf('requests', 'input_tokens', 'output_tokens', 'retry_after') },
    "call `step` waited `waited_ms` for the API's rate limits (`reason`: the last limit it waited for, or a refusal's retry-after) before it went; a note " +
      'for the reader: resume and replay skip it',
  ),
  estimate: event(
    {
      worst_usd: number(),
      worst_bound: oneOf('budget_usd', 'max_tokens_total', 'turns'),
      likely_usd: number(),
      per_item_usd: number(),
      sessions: integer(),
      agents: array(ESTIMATE_ROW),
    },
    'what the run was estimated to cost before its first call (`conclave estimate`, docs/pricing.md): with `--max-estimate-usd`, and in GitHub Actions; ' +
      'a resume compares the recorded `likely_usd` with a raised `--max-estimate-usd`; a note: resume and replay skip it',
  ),
  spend_pools: event(
    { store: string(), pools: array(object({ name: string(), cap_usd: number(), per: string() })) },
    'the live calls that follow, up to the next `resumed`, drew from these spend pools (`--spend-pool NAME=CAP/WINDOW`) kept in `store` (`--coordinate`, its ' +
      'password hidden); a note: resume and replay skip it',
  ),
  context_exceeded: event(
    { ...AGENT_TURN, step: integer(), error: string() },
    'the API refused call `step` as too long ("prompt is too long"): the conversation is compacted and the call made again; resume and replay meet the ' +
      'refusal at the same place',
  ),
  context_compacted: event(
    {
      ...AGENT_TURN,
      reason: oneOf('threshold', 'too_long'),
      tokens_before: integer(),
      tokens_after: integer(),
      cleared: integer(),
      summary: nullable(string()),
      left_out: integer(),
      by: optional(oneOf('api', 'conclave')),
      cost_usd: optional(number()),
    },
    "the agent's conversation was kept within its `compact_at`: `cleared` old tool results emptied, and, when `summary` is not null, its earlier turns " +
      'replaced by that summary (written by the agent in the `model_call` just before; `left_out` earlier turns did not fit in that call); `by`: `api` ' +
      "when that call was the API's compaction request (`compaction: summarize`, docs/api-controls.md), `conclave` when conclave asked for the " +
      'summary itself; `cost_usd`, what that call cost',
  ),
  tool_call: event({ ...AGENT_TURN, tool: string(), tool_use_id: string(), input: json() }, 'a tool began'),
  tool_result: event({ ...AGENT_TURN, tool: string(), tool_use_id: string(), content: string(), is_error: boolean() }, 'its result'),
  turn_ended: event({ ...AGENT_TURN, elapsed_ms: number() }, 'the turn finished: its messages are handled'),
  turn_failed: event(
    {
      ...AGENT_TURN,
      error: string(),
      call: optional(object({ step: integer(), model: string(), kind: oneOf('auth', 'outage', 'request'), status: nullable(integer()) })),
    },
    'the turn failed: the run stopped; `call`, when a model call failed for good (after retries): which, and how',
  ),
  grader_scored: event(
    { grader: string(), value: nullable(number()), reason: string(), model: string() },
    "a rubric grader of the workflow's `graders:` scored the run, after its team stopped and before `run_ended` (docs/graders.md): `value` from 0 to 1 " +
      '(null when it could not be scored, `reason` saying why), by `model`; its call is the `model_call` of agent `grader-ID` just before',
  ),
  run_ended: event(
    {
      status: oneOf(...END_STATUSES),
      exit_code: integer(),
      reason: string(),
      summary: string(),
      outputs: record(string()),
      output_errors: optional(array(string())),
      usage: optional(object({ calls: integer(), usage: USAGE, costUsd: number() })),
    },
    'the end; `status` as `--json` says it, or `stale`: a run on a pull request closed without going on when a vote came after the pull request ' +
      'moved on from the head it reviewed (exit_code 0, nothing paid; a resume refuses it as ended)',
  ),
  resumed: event({ replayed_through: integer(), at: string(), conclave_version: string() }, 'a resume took over after event `replayed_through`'),
  repair: event({ torn_bytes: integer(), kept: optional(string()) }, 'a torn last line was cut off and kept in the file `kept`'),
};

/** Whether `type` is an event this version knows (others are skipped when read). */
export function isKnownType(type: string): type is keyof typeof EVENTS {
  return Object.hasOwn(EVENTS, type);
}

/** Throws `refuse(problem)` unless the event of a known type has the fields its schema gives. */
export function assertEvent<E>(
  event: Record<string, unknown>,
  type: keyof typeof EVENTS,
  refuse: (problem: string) => Error,
): asserts event is Record<string, unknown> & E {
  const stamp = event.at_ms;
  if (stamp !== undefined && !(Number.isSafeInteger(stamp) && (stamp as number) >= 0))
    throw refuse(`at_ms must be a time in milliseconds, not ${JSON.stringify(stamp)}`);
  const problem = EVENTS[type].schema.problem(event, '');
  if (problem) throw refuse(problem);
}

/** Throws `refuse(problem)` unless the header has the fields its schema gives. */
export function assertHeader<H>(header: Record<string, unknown>, refuse: (problem: string) => Error): asserts header is Record<string, unknown> & H {
  const problem = HEADER.problem(header, '');
  if (problem) throw refuse(problem);
}
