/** The session file's format version; a file of a newer major version is refused. */
export const SESSION_FORMAT = 1;

/** The first line of a session file. */
export interface SessionHeader {
  type: 'header';
  format: number;
  run_id: string;
  conclave_version: string;
  workflow: { path: string; sha256: string };
  /** The input values, secrets masked as "***". */
  inputs: Record<string, unknown>;
  /**
   * Per secret input given, a salted scrypt digest of its value (`scrypt$SALT$HASH`, base64):
   * enough for a resume to tell that the value given again differs, not to recover it.
   */
  secret_checks?: Record<string, string>;
  /** The session path the run started with: `$<< run.session >>` keeps this value when resumed. */
  session: string;
  started_at: string;
  /** Set in a file made by `resume --at`. */
  forked_from?: { path: string; seq: number };
  /** Set in a file recorded against the test server, such as the offline demo's. */
  note?: string;
}

/** The limits in force, as recorded (`maxTokensTotal` is null for no limit). */
export interface RecordedLimits {
  timeoutMs: number;
  maxTurns: number;
  maxTurnsPerAgent: number;
  budgetUsd: number;
  maxTokensTotal: number | null;
  concurrency: number;
}

export interface RecordedMessage {
  id: number;
  kind: string;
  sender: string;
  text: string;
  recipients: string[];
}

export interface RecordedProposal {
  id: string;
  proposer: string;
  question: string;
  options: string[];
  voters: string[];
  rule: string;
  quorum: number;
  deadline_turns: number | null;
  opened_at_turn: number;
}

export interface RecordedUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** A model's response as the API sent it: every content block is kept verbatim. */
export interface RecordedResponse {
  content: ({ type: string } & Record<string, unknown>)[];
  stop_reason: string | null;
  usage?: Partial<Record<keyof RecordedUsage, number | null>>;
  [field: string]: unknown;
}

/** Every event a run writes, by type (docs/session-format.md), without its `seq`. */
export type EventBody =
  | { type: 'run_started'; workflow: string; limits: RecordedLimits }
  | { type: 'limits_changed'; limits: RecordedLimits; changed: string[] }
  | { type: 'setup_finished'; id: string; stdout: string }
  | { type: 'setup_failed'; id: string; error: string }
  | { type: 'mcp_tools'; server: string; tools: { name: string; description: string; input_schema: Record<string, unknown>; read_only: boolean }[] }
  | { type: 'message'; message: RecordedMessage }
  | { type: 'ack'; agent: string; through: number }
  | { type: 'proposal_opened'; proposal: RecordedProposal }
  | { type: 'vote'; proposal: string; voter: string; option: string; reason: string }
  | { type: 'proposal_closed'; proposal: string; status: string; winner: string | null; reason: string | null }
  | { type: 'turn_counted'; agent: string }
  | { type: 'turn_started'; agent: string; turn: number; through: number; messages: number[] }
  | {
      type: 'model_call';
      agent: string;
      turn: number;
      step: number;
      request: Record<string, unknown>;
      request_sha256: string;
      response: RecordedResponse;
      cost_usd: number;
      cached?: true;
    }
  | { type: 'context_exceeded'; agent: string; turn: number; step: number; error: string }
  | {
      type: 'context_compacted';
      agent: string;
      turn: number;
      reason: 'threshold' | 'too_long';
      tokens_before: number;
      tokens_after: number;
      cleared: number;
      summary: string | null;
      left_out: number;
    }
  | { type: 'tool_call'; agent: string; turn: number; tool: string; tool_use_id: string; input: unknown }
  | { type: 'tool_result'; agent: string; turn: number; tool: string; tool_use_id: string; content: string; is_error: boolean }
  | { type: 'turn_ended'; agent: string; turn: number; elapsed_ms: number }
  | { type: 'turn_failed'; agent: string; turn: number; error: string }
  | {
      type: 'run_ended';
      status: string;
      exit_code: number;
      reason: string;
      summary: string;
      outputs: Record<string, string>;
      output_errors: string[];
      usage: { calls: number; usage: RecordedUsage; costUsd: number };
    }
  | { type: 'resumed'; replayed_through: number; at: string; conclave_version: string }
  | { type: 'repair'; torn_bytes: number; kept: string | undefined };

export type EventType = EventBody['type'];

/** One line after the header. */
export type SessionEvent = EventBody & { seq: number };

/** The event of one type. */
export type EventOf<T extends EventType> = Extract<SessionEvent, { type: T }>;

/** Fields whose value may differ between a run and its re-execution: time, and limits a resume may raise. */
export const VOLATILE_FIELDS = ['elapsed_ms', 'limits'] as const;

/** Events that mark where a run stopped: a resume replays what came before the first of them. */
export const STOP_EVENTS: ReadonlySet<string> = new Set<EventType>(['turn_failed', 'setup_failed', 'run_ended']);

/** Events about the file itself, not the run: never replayed. */
export const FILE_EVENTS: ReadonlySet<string> = new Set<EventType>(['resumed', 'repair']);
