import type { SessionEvent } from './format.js';

/** One bar of the timeline: a turn, or a call's wait for the API's rate limits. */
export interface TimelineBar {
  label: string;
  kind: 'turn' | 'failed' | 'wait';
  startMs: number;
  endMs: number;
}

/** Each agent's bars, agents in the order they first worked (docs/traces.md: the timeline). */
export type Timeline = { agent: string; bars: TimelineBar[] }[];

/**
 * A run's timeline, from the time each event was written (`at_ms`): a bar per turn, from its
 * start to its end, and a bar per wait for a rate limit. A file from before `at_ms` has none.
 */
export function timelineOf(events: readonly SessionEvent[]): Timeline {
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
    }
  }
  for (const bar of open.values()) bar.endMs = Math.max(bar.startMs, latest);
  return [...rows].map(([agent, bars]) => ({ agent, bars }));
}
