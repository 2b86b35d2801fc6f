import type { EventOf, SessionEvent } from '../format.js';
import type { SessionSummary } from '../summary.js';

/**
 * A grader's result: a number (or null where the run gives it no meaning: no findings to share, no
 * vote to agree on), and what it was computed from, for a person to check (docs/graders.md).
 */
export interface GraderResult {
  value: number | null;
  /** What the value stands on, in words: the agents, findings or calls behind it (where there are any). */
  behind?: string;
  [detail: string]: unknown;
}

/** What graders read: the session's effective events, and its summary (usage, findings, proposals, the end). */
export interface GradedSession {
  events: readonly SessionEvent[];
  summary: SessionSummary;
}

export interface Grader {
  id: string;
  /** What it measures, in a line (shown by `grade` and the report). */
  means: string;
  /** How several sessions' values make a total: summed (cost, calls) or averaged (shares). */
  total: 'sum' | 'mean';
  grade(session: GradedSession): GraderResult;
}

/**
 * The agents in the order they came into the run: the order of their first turn, an agent spawned
 * at run time where its spawn was recorded. The session does not keep the workflow's own order of
 * agents; the kickoff's agent comes first, so this is the order they were named or spawned in.
 */
export function agentOrder(events: readonly SessionEvent[]): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  for (const e of events) {
    const agent = e.type === 'turn_started' || e.type === 'agent_spawned' ? e.agent : undefined;
    if (agent !== undefined && !seen.has(agent)) {
      seen.add(agent);
      order.push(agent);
    }
  }
  return order;
}

/** The lead: the agent that called `complete`, or else the first to take a turn (the kickoff's). */
export function leadOf(events: readonly SessionEvent[]): string | undefined {
  return completeCall(events)?.agent ?? agentOrder(events)[0];
}

const completes = new WeakMap<readonly SessionEvent[], EventOf<'tool_call'> | null>();

/** The first accepted `complete` of the run, where it was made: found once per session, as five graders ask. */
export function completeCall(events: readonly SessionEvent[]): EventOf<'tool_call'> | undefined {
  let found = completes.get(events);
  if (found === undefined) completes.set(events, (found = firstComplete(events) ?? null));
  return found ?? undefined;
}

function firstComplete(events: readonly SessionEvent[]): EventOf<'tool_call'> | undefined {
  const ok = new Set(
    events.filter((e) => e.type === 'tool_result' && e.tool === 'complete' && !e.is_error).map((e) => (e as EventOf<'tool_result'>).tool_use_id),
  );
  return events.find((e): e is EventOf<'tool_call'> => e.type === 'tool_call' && e.tool === 'complete' && ok.has(e.tool_use_id));
}

/** A share, rounded to four places so that a value reads the same in every output. */
export function share(part: number, whole: number): number | null {
  return whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000;
}
