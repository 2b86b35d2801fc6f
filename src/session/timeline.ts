import type { SessionEvent } from './format.js';
import { isPerson } from './person.js';

/** One bar of the timeline: a turn, a call's wait for the API's rate limits, people's votes awaited, or the run parked. */
export interface TimelineBar {
  label: string;
  kind: 'turn' | 'failed' | 'wait' | 'people' | 'parked';
  startMs: number;
  endMs: number;
}

/** Each agent's bars, agents in the order they first worked (docs/traces.md: the timeline); the run's own waits in the lane `RUN_LANE`. */
export type Timeline = { agent: string; bars: TimelineBar[] }[];

/** The lane of what the run waited for as a whole: people's votes, and the time it was parked. No agent may be named so (`(` is not a name's). */
export const RUN_LANE = '(waiting)';

/**
 * A run's timeline, from the time each event was written (`at_ms`): a bar per turn, from its
 * start to its end, and a bar per wait for a rate limit; in the run's own lane, a bar per proposal
 * that waited for people's votes (opened to closed, or to the end) and one per time the run was
 * parked (its last event before a resume to the resume: `all`, the file's events, holds the
 * resumes that the effective `events` leave out). A file from before `at_ms` has none.
 */
export function timelineOf(events: readonly SessionEvent[], all: readonly SessionEvent[] = events): Timeline {
  const rows = new Map<string, TimelineBar[]>();
  const open = new Map<string, TimelineBar>();
  let latest = 0;
  const row = (agent: string) => rows.get(agent) ?? rows.set(agent, []).get(agent)!;
  for (const e of events) {
    if (e.at_ms === undefined) continue;
    latest = Math.max(latest, e.at_ms);
    if (e.type === 'turn_started') {
      const bar: TimelineBar = { label: `turn ${e.turn}`, kind: 'turn', startMs: e.at_ms, endMs: e.at_ms };
      open.set(e.agent, bar);
      row(e.agent).push(bar);
    } else if (e.type === 'turn_ended' || e.type === 'turn_failed') {
      const bar = open.get(e.agent);
      if (bar) bar.endMs = e.at_ms;
      if (bar && e.type === 'turn_failed') bar.kind = 'failed';
      open.delete(e.agent);
    } else if (e.type === 'rate_waited') {
      row(e.agent).push({ label: `wait ${e.reason.replace('_', ' ')}`, kind: 'wait', startMs: Math.max(0, e.at_ms - Math.round(e.waited_ms)), endMs: e.at_ms });
    } else if (e.type === 'proposal_opened' && e.proposal.voters.some(isPerson)) {
      const bar: TimelineBar = { label: `votes on ${e.proposal.id}`, kind: 'people', startMs: e.at_ms, endMs: e.at_ms };
      open.set(`${RUN_LANE}${e.proposal.id}`, bar);
      row(RUN_LANE).push(bar);
    } else if (e.type === 'proposal_closed') {
      const bar = open.get(`${RUN_LANE}${e.proposal}`);
      if (bar) bar.endMs = e.at_ms;
      open.delete(`${RUN_LANE}${e.proposal}`);
    }
  }
  for (const parked of parksOf(all)) row(RUN_LANE).push(parked);
  for (const bar of open.values()) bar.endMs = Math.max(bar.startMs, latest);
  return [...rows].map(([agent, bars]) => ({ agent, bars }));
}

/** The times a run was stopped before a resume took it up again: from its last event's time to the resume's; `parked` when it stopped waiting. */
function parksOf(all: readonly SessionEvent[]): TimelineBar[] {
  const bars: TimelineBar[] = [];
  let last: number | undefined;
  let ended: string | undefined;
  for (const e of all) {
    if (e.type === 'resumed') {
      const at = e.at_ms ?? Date.parse(e.at);
      const label = ended === 'waiting' ? 'parked' : `stopped${ended ? ` (${ended})` : ''}`;
      if (last !== undefined && Number.isFinite(at) && at > last) bars.push({ label, kind: 'parked', startMs: last, endMs: at });
      ended = undefined;
    }
    if (e.type === 'run_ended') ended = e.status;
    if (e.at_ms !== undefined) last = e.at_ms;
  }
  return bars;
}
