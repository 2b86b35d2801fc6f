import type { EventOf, SessionEvent } from '../format.js';
import { TEAM_TOOLS } from '../team-tools.js';
import { completeCall, type Grader } from './grader.js';

const ANSWERS = new Set(['vote', 'propose', 'complete']);

/** The events after the run's `complete`, or none when it was not completed. */
function afterComplete(events: readonly SessionEvent[]): readonly SessionEvent[] {
  const complete = completeCall(events);
  return complete ? events.slice(events.indexOf(complete) + 1) : [];
}

/**
 * A mention (`@name` in an agent's message, the named agent among its recipients) that the named
 * agent never answered: it posted no message, cast no vote, opened no proposal and did not
 * complete after it. Mentions written after the run's `complete` are not counted.
 */
export const unansweredMentions: Grader = {
  id: 'unanswered_mentions',
  means: "mentions of an agent (@name in an agent's message) that the agent never answered: no message, vote, proposal or complete after it",
  total: 'sum',
  grade({ events }) {
    const over = new Set(afterComplete(events));
    // Each agent's last answer: a mention is answered when one comes after it.
    const lastAnswer = new Map<string, number>();
    events.forEach((e, i) => {
      const by = answerBy(e);
      if (by !== undefined) lastAnswer.set(by, i);
    });
    const unanswered: { message: number; from: string; to: string }[] = [];
    events.forEach((e, i) => {
      if (e.type !== 'message' || e.message.kind !== 'agent' || over.has(e)) return;
      const { sender, recipients, text, id } = e.message;
      for (const to of recipients.filter((r) => r !== sender && mentions(text, r)))
        if ((lastAnswer.get(to) ?? -1) <= i) unanswered.push({ message: id, from: sender, to });
    });
    const behind = unanswered.map((u) => `#${u.message} @${u.from} → @${u.to}`).join('; ');
    return { value: unanswered.length, unanswered, ...(behind ? { behind } : {}) };
  },
};

function mentions(text: string, agent: string): boolean {
  return new RegExp(`(^|[^\\w@])@${agent.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`).test(text);
}

/** The agent an event is an answer of, if it is one: a message it posted, its vote, its proposal or its complete. */
function answerBy(e: SessionEvent): string | undefined {
  if (e.type === 'message') return e.message.kind === 'agent' ? e.message.sender : undefined;
  if (e.type === 'vote') return e.voter;
  return e.type === 'tool_call' && ANSWERS.has(e.tool) ? e.agent : undefined;
}

/**
 * Agents that did nothing: woken (a turn, or spawned) and never posted a message or called a
 * tool. `idle_turns` counts the turns of any agent that ended with neither.
 */
export const idleAgents: Grader = {
  id: 'idle_agents',
  means: 'agents woken or spawned that never posted a message or called a tool (idle_turns: turns that did neither)',
  total: 'sum',
  grade({ events }) {
    const woken = new Set<string>();
    const active = new Set<string>();
    const open = new Map<string, boolean>();
    let idleTurns = 0;
    for (const e of events) {
      if (e.type === 'agent_spawned') woken.add(e.agent);
      if (e.type === 'turn_started') {
        woken.add(e.agent);
        open.set(e.agent, false);
      }
      const actor = e.type === 'tool_call' ? e.agent : e.type === 'message' && e.message.kind === 'agent' ? e.message.sender : undefined;
      if (actor !== undefined) {
        active.add(actor);
        if (open.has(actor)) open.set(actor, true);
      }
      if ((e.type === 'turn_ended' || e.type === 'turn_failed') && open.has(e.agent)) {
        if (open.get(e.agent) === false) idleTurns++;
        open.delete(e.agent);
      }
    }
    const idle = [...woken].filter((a) => !active.has(a));
    return {
      value: idle.length,
      agents: idle,
      idle_turns: idleTurns,
      behind: `${idle.map((a) => `@${a}`).join(', ') || 'none'}; ${idleTurns} idle turn${idleTurns === 1 ? '' : 's'}`,
    };
  },
};

/** JSON with its keys in order, so that the same input written another way is the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/**
 * Calls of a workspace or server tool with the same input as a call another agent made before
 * (the team's own tools are left out: two votes alike are agreement, not waste; two findings
 * alike are `duplicate_findings`).
 */
export const redundantToolCalls: Grader = {
  id: 'redundant_tool_calls',
  means: 'calls of a workspace or MCP tool with the same tool and input as an earlier call by another agent',
  total: 'sum',
  grade({ events }) {
    const first = new Map<string, EventOf<'tool_call'>>();
    const redundant: { tool: string; input: string; agent: string; first: string }[] = [];
    for (const e of events) {
      if (e.type !== 'tool_call' || e.tool === 'annotate' || (TEAM_TOOLS as readonly string[]).includes(e.tool)) continue;
      const key = `${e.tool}\u0000${canonicalOrOwn(e)}`;
      const earlier = first.get(key);
      if (!earlier) first.set(key, e);
      else if (earlier.agent !== e.agent) redundant.push({ tool: e.tool, input: clip(canonicalOrOwn(e)), agent: e.agent, first: earlier.agent });
    }
    const behind = redundant.map((r) => `@${r.agent} ${r.tool} ${r.input} (first @${r.first})`).join('; ');
    return { value: redundant.length, calls: redundant, ...(behind ? { behind } : {}) };
  },
};

/** The input as canonical JSON; one nested too deeply to walk is its call's own (never the same as another). */
function canonicalOrOwn(e: EventOf<'tool_call'>): string {
  try {
    return canonical(e.input);
  } catch (error) {
    if (error instanceof RangeError) return `\u0000${e.seq}`;
    throw error;
  }
}

const clip = (text: string) => (text.length > 120 ? `${text.slice(0, 119)}…` : text);

/** Turns that began after the lead's `complete`: work the run paid for after it was decided. */
export const workAfterComplete: Grader = {
  id: 'work_after_complete',
  means: "turns that began after the lead's complete",
  total: 'sum',
  grade({ events }) {
    const turns = afterComplete(events).filter((e): e is EventOf<'turn_started'> => e.type === 'turn_started');
    const behind = turns.map((t) => `@${t.agent} turn ${t.turn}`).join(', ');
    return { value: turns.length, turns: turns.map((t) => ({ agent: t.agent, turn: t.turn })), ...(behind ? { behind } : {}) };
  },
};
