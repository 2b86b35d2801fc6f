import type { Infer } from './schema.js';
import type { EVENTS, HEADER, LIMITS, MESSAGE, PROPOSAL, RESPONSE, USAGE } from './session-events.js';

/**
 * The session file's format version; a file of a newer version is refused. Each version's files
 * are kept under test/fixtures/session/format-N/, and every one of them must still read
 * (docs/session-format.md: compatibility).
 */
export const SESSION_FORMAT = 1;

/** The first line of a session file (docs/session-format.md: the header). */
export type SessionHeader = Infer<typeof HEADER>;
/** The limits in force, as recorded (`maxTokensTotal` is null for no limit). */
export type RecordedLimits = Infer<typeof LIMITS>;
export type RecordedMessage = Infer<typeof MESSAGE>;
export type RecordedProposal = Infer<typeof PROPOSAL>;
export type RecordedUsage = Infer<typeof USAGE>;
/** A model's response as the API sent it: every content block is kept verbatim. */
export type RecordedResponse = Infer<typeof RESPONSE>;

type Events = typeof EVENTS;
/** Every event a run writes, by type (docs/session-format.md), without its `seq`. */
export type EventBody = { [T in keyof Events]: { type: T } & Infer<Events[T]['schema']> }[keyof Events];

export type EventType = EventBody['type'];

/** One line after the header: its place, and when it was written (epoch milliseconds; files of 0.1.0 before traces have none). */
export type SessionEvent = EventBody & { seq: number; at_ms?: number };

/** The event of one type. */
export type EventOf<T extends EventType> = Extract<SessionEvent, { type: T }>;

/** Fields whose value may differ between a run and its re-execution: times, and limits a resume may raise. */
export const VOLATILE_FIELDS = ['elapsed_ms', 'limits', 'at_ms'] as const;

/** Events that mark where a run stopped: a resume replays what came before the first of them. */
export const STOP_EVENTS: ReadonlySet<string> = new Set<EventType>(['turn_failed', 'setup_failed', 'run_ended']);

/** Events about the file itself, not the run: never replayed. */
export const FILE_EVENTS: ReadonlySet<string> = new Set<EventType>(['resumed', 'repair']);

/** A person's vote as conclave checked it with GitHub (cli/votes/vote-checks.ts): the `human_vote` event's fields. */
export type HumanVote = Omit<EventOf<'human_vote'>, 'type' | 'seq' | 'at_ms'>;
