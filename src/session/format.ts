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
  /** The session path the run started with: `$<< run.session >>` keeps this value when resumed. */
  session: string;
  started_at: string;
  /** Set in a file made by `resume --at`. */
  forked_from?: { path: string; seq: number };
  /** Set in a file recorded against the test server, such as the offline demo's. */
  note?: string;
}

/** One line after the header. */
export interface SessionEvent {
  seq: number;
  type: string;
  [field: string]: unknown;
}

/** Fields whose value may differ between a run and its re-execution: time, and limits a resume may raise. */
export const VOLATILE_FIELDS = ['elapsed_ms', 'limits'] as const;

/** Events that mark where a run stopped: a resume replays what came before the first of them. */
export const STOP_EVENTS = new Set(['turn_failed', 'setup_failed', 'run_ended']);

/** Events about the file itself, not the run: never replayed. */
export const FILE_EVENTS = new Set(['resumed', 'repair']);

/** Every event type this version writes; readers skip others (DESIGN: unknown types are ignored). */
export const EVENT_TYPES = new Set([
  'run_started',
  'setup_finished',
  'setup_failed',
  'message',
  'ack',
  'proposal_opened',
  'vote',
  'proposal_closed',
  'turn_counted',
  'turn_ended',
  'turn_started',
  'turn_failed',
  'model_call',
  'tool_call',
  'tool_result',
  'run_ended',
  'resumed',
  'repair',
]);
