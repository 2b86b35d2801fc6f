import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/session/format.js';
import { HEADER } from '../helpers/session-header.js';
import { GRADER_IDS, TEAM_GRADER_IDS, gradersShown, gradeSession, totalOf } from '../../src/session/graders/graders.js';

/** The graders (docs/graders.md) on hand-made sessions: each one's definition, edge by edge. */

const header = HEADER;

/** A session from event bodies, numbered in order. */
function session(...bodies: Record<string, unknown>[]): SessionEvent[] {
  return bodies.map((b, i) => ({ seq: i + 1, ...b }) as unknown as SessionEvent);
}

const grade = (events: SessionEvent[]) => gradeSession({ header, events, effective: events });
const value = (events: SessionEvent[], id: string) => grade(events)[id]!.value;

const turn = (agent: string, n = 1) => ({ type: 'turn_started', agent, turn: n, through: 0, messages: [] });
const ended = (agent: string, n = 1, elapsed_ms = 10) => ({ type: 'turn_ended', agent, turn: n, elapsed_ms });
let ids = 0;
/** A tool call and its result (accepted unless `error`). */
function tool(agent: string, name: string, input: Record<string, unknown>, error = false): Record<string, unknown>[] {
  const id = `toolu_${++ids}`;
  return [
    { type: 'tool_call', agent, turn: 1, tool: name, tool_use_id: id, input },
    { type: 'tool_result', agent, turn: 1, tool: name, tool_use_id: id, content: error ? 'refused' : 'ok', is_error: error },
  ];
}
const annotate = (agent: string, path: string, line: number, end_line?: number, error = false) =>
  tool(agent, 'annotate', { path, line, ...(end_line ? { end_line } : {}), level: 'warning', message: 'm' }, error);
const complete = (agent = 'lead', outputs?: Record<string, unknown>) =>
  tool(agent, 'complete', { status: 'success', summary: 's', ...(outputs ? { outputs } : {}) });
let messageIds = 0;
const message = (sender: string, recipients: string[], text: string) => ({
  type: 'message',
  message: { id: ++messageIds, kind: 'agent', sender, recipients, text },
});
const opened = (id: string, options: string[], voters: string[], advisers?: string[]) => ({
  type: 'proposal_opened',
  proposal: {
    id,
    proposer: 'lead',
    question: 'q',
    options,
    voters,
    rule: 'majority',
    quorum: 1,
    deadline_turns: null,
    opened_at_turn: 1,
    ...(advisers ? { advisers } : {}),
  },
});
const vote = (proposal: string, voter: string, option: string) => ({ type: 'vote', proposal, voter, option, reason: '' });
const closed = (proposal: string, winner: string | null) => ({
  type: 'proposal_closed',
  proposal,
  status: winner ? 'decided' : 'no_decision',
  winner,
  reason: null,
});
const call = (agent: string, response: Record<string, unknown> = {}, cost_usd = 0.01) => ({
  type: 'model_call',
  agent,
  turn: 1,
  step: 1,
  request: { model: 'claude-sonnet-5-5' },
  request_sha256: '',
  cost_usd,
  response: { content: [], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 10 }, ...response },
});

describe('the team graders', () => {
  it('duplicate_findings: overlapping lines of the same file by another agent, earlier; not an agent repeating itself, another file, or a refused call', () => {
    const events = session(
      turn('a'),
      turn('b'),
      ...annotate('a', 'x.js', 2, 4),
      ...annotate('b', 'x.js', 4), // overlaps a's 2-4
      ...annotate('b', 'x.js', 5), // next to it, no line in common
      ...annotate('a', 'x.js', 3), // a repeating itself... but b's 4 is not on 3: not a duplicate
      ...annotate('b', 'y.js', 2), // another file
      ...annotate('a', 'x.js', 5, undefined, true), // refused: not a finding
    );
    const g = grade(events).duplicate_findings!;
    expect(g).toMatchObject({ value: 0.2, findings: 5 });
    expect(g.duplicates).toEqual([{ agent: 'b', path: 'x.js', line: 4, end_line: 4, earlier: { agent: 'a', path: 'x.js', line: 2, end_line: 4 } }]);
    expect(g.behind).toBe("@b's x.js:4 overlaps @a's");
    // The later of the two is the duplicate, whoever it is; one finding overlapping two earlier ones counts once.
    expect(value(session(...annotate('a', 'x.js', 1, 9), ...annotate('b', 'x.js', 3), ...annotate('c', 'x.js', 2, 3)), 'duplicate_findings')).toBe(0.6667);
    expect(value(session(turn('a')), 'duplicate_findings')).toBeNull();
    // Findings over many lines: a wide one overlaps a later narrow one, and a later wide one an earlier narrow one, the first recorded named.
    const wide = grade(
      session(...annotate('a', 'x.js', 1, 1000), ...annotate('b', 'x.js', 700), ...annotate('c', 'y.js', 5), ...annotate('d', 'y.js', 1, 900)),
    );
    expect(wide.duplicate_findings!.duplicates).toEqual([
      { agent: 'b', path: 'x.js', line: 700, end_line: 700, earlier: { agent: 'a', path: 'x.js', line: 1, end_line: 1000 } },
      { agent: 'd', path: 'y.js', line: 1, end_line: 900, earlier: { agent: 'c', path: 'y.js', line: 5, end_line: 5 } },
    ]);
    const first = grade(session(...annotate('a', 'x.js', 3), ...annotate('b', 'x.js', 1, 600), ...annotate('c', 'x.js', 2, 4)));
    expect((first.duplicate_findings!.duplicates as { earlier: { agent: string } }[]).map((d) => d.earlier.agent)).toEqual(['a', 'a']);
  });

  it("marginal_findings: each reviewer's unique findings in the order they came in, the lead left out; the value is the last one's", () => {
    const events = session(
      turn('lead'),
      turn('r1'),
      { type: 'agent_spawned', agent: 'r2', template: 't', role: 'worker', parent: 'lead', depth: 1 },
      turn('r3'),
      turn('r2'),
      ...annotate('r2', 'x.js', 1), // r2 came in before r3, though it found later
      ...annotate('r3', 'x.js', 1),
      ...annotate('r1', 'x.js', 7),
      ...annotate('lead', 'x.js', 9),
      ...complete(),
    );
    const g = grade(events).marginal_findings!;
    expect(g.curve).toEqual([
      { agent: 'r1', findings: 1, unique: 1, total_unique: 1 },
      { agent: 'r2', findings: 1, unique: 1, total_unique: 2 },
      { agent: 'r3', findings: 1, unique: 0, total_unique: 2 },
    ]);
    expect(g.value).toBe(0);
    expect(g.behind).toBe('@r1 +1, @r2 +1, @r3 +0');
    // Without a complete, the lead is the first to take a turn.
    expect(value(session(turn('boss'), turn('r'), ...annotate('r', 'x.js', 1), ...annotate('boss', 'x.js', 3)), 'marginal_findings')).toBe(1);
    expect(value(session(turn('lead'), turn('r')), 'marginal_findings')).toBeNull();
  });

  it("vote_agreement: the share choosing the agents' most chosen option per proposal of 2 votes or more, averaged; people against the agents' plurality", () => {
    const events = session(
      opened('p1', ['yes', 'no'], ['a', 'b', 'c']),
      vote('p1', 'a', 'yes'),
      vote('p1', 'b', 'yes'),
      vote('p1', 'c', 'no'),
      opened('p2', ['yes', 'no'], ['a', 'b', '@octocat', '@hubot']),
      vote('p2', 'a', 'no'),
      vote('p2', 'b', 'no'),
      vote('p2', '@octocat', 'no'),
      vote('p2', '@hubot', 'yes'),
      opened('p3', ['yes', 'no'], ['a']),
      vote('p3', 'a', 'yes'),
    );
    const g = grade(events).vote_agreement!;
    expect(g.value).toBe(0.8333); // (2/3 + 1) / 2; p3 has one vote
    expect(g.proposals).toEqual([
      { id: 'p1', agents: 0.6667, votes: 3 },
      { id: 'p2', agents: 1, votes: 2, people: 0.5 },
    ]);
    expect(g.people).toBe(0.5);
    // An adviser's vote on a people's decision is an agent's vote.
    const advice = session(opened('p', ['a', 'b'], ['@org/team'], ['x', 'y']), vote('p', 'x', 'a'), vote('p', 'y', 'b'));
    expect(value(advice, 'vote_agreement')).toBe(0.5);
    expect(value(session(opened('p', ['a'], ['x']), vote('p', 'x', 'a')), 'vote_agreement')).toBeNull();
  });

  it("lead_override: a proposal closed against its votes' plurality, and a complete whose output is an option other than the vote's", () => {
    const against = session(opened('v', ['approve', 'reject'], ['a', 'b']), vote('v', 'a', 'reject'), vote('v', 'b', 'reject'), closed('v', 'approve'));
    expect(grade(against).lead_override).toMatchObject({
      value: 1,
      overrides: [{ proposal: 'v', voted: 'reject', decided: 'approve', by: 'the proposal closed' }],
    });
    const completed = session(
      opened('v', ['approve', 'reject'], ['a', 'b']),
      vote('v', 'a', 'reject'),
      vote('v', 'b', 'reject'),
      closed('v', 'reject'),
      ...complete('lead', { verdict: 'approve', note: 'reject is not this' }),
    );
    expect(grade(completed).lead_override).toMatchObject({
      value: 1,
      overrides: [{ voted: 'reject', decided: 'approve', by: "@lead's complete (output verdict)" }],
    });
    // Following the vote, a tie with no winner, or an output that is no option: no override.
    const agreeing = session(opened('v', ['approve', 'reject'], ['a', 'b']), vote('v', 'a', 'reject'), vote('v', 'b', 'approve'), closed('v', null));
    expect(value([...agreeing, ...session(...complete('lead', { verdict: 'reject', other: 'maybe' }))], 'lead_override')).toBe(0);
  });

  it('messages_per_decision: agent messages over proposals won and the complete', () => {
    const events = session(
      message('lead', ['a'], '@a go'),
      message('a', ['lead'], 'done'),
      { type: 'message', message: { id: 99, kind: 'system', sender: 'system', recipients: ['lead'], text: 'not counted' } },
      opened('v', ['x'], ['a']),
      vote('v', 'a', 'x'),
      closed('v', 'x'),
      message('lead', [], 'ok'),
      ...complete(),
    );
    expect(grade(events).messages_per_decision).toMatchObject({ value: 1.5, messages: 3, decisions: 2, behind: '3 messages, 2 decisions' });
    expect(value(session(message('a', [], 'x')), 'messages_per_decision')).toBeNull();
  });

  it('unanswered_mentions: an @mention the named agent never answered by a message, vote, proposal or complete; not a route, itself, or after the complete', () => {
    const events = session(
      message('lead', ['a', 'b', 'c', 'd'], '@a @b @c please look; @lead notes it'), // d is a recipient but not named
      message('a', ['lead'], 'seen'), // answers; also a reply routed to lead, not a mention
      vote('p', 'b', 'yes'), // b answers with a vote
      message('lead', ['lead'], '@lead to myself'),
    );
    const g = grade(events).unanswered_mentions!;
    expect(g).toMatchObject({ value: 1, unanswered: [{ message: expect.any(Number), from: 'lead', to: 'c' }] });
    expect(g.behind).toMatch(/^#\d+ @lead → @c$/);
    const late = session(...complete(), message('lead', ['a'], 'thanks @a'));
    expect(value(late, 'unanswered_mentions')).toBe(0);
    // A name that only begins another (@a in @ab) is not a mention of it.
    expect(value(session(message('lead', ['a', 'ab'], '@ab only'), message('ab', [], 'ok')), 'unanswered_mentions')).toBe(0);
    const answeredByComplete = session(message('a', ['lead'], '@lead done'), ...complete());
    expect(value(answeredByComplete, 'unanswered_mentions')).toBe(0);
  });

  it('idle_agents: woken or spawned and never posting or calling a tool; idle_turns counts every turn that did neither', () => {
    const events = session(
      turn('lead'),
      message('lead', ['a'], '@a go'),
      ended('lead'),
      turn('a'),
      ended('a'),
      turn('a', 2),
      ...tool('a', 'grep', { pattern: 'x' }),
      ended('a', 2),
      turn('b'),
      ended('b'),
      { type: 'agent_spawned', agent: 's', template: 't', role: 'worker', parent: 'lead', depth: 1 },
      turn('lead', 2),
      { type: 'turn_failed', agent: 'lead', turn: 2, error: 'x' },
    );
    expect(grade(events).idle_agents).toMatchObject({ value: 2, agents: ['b', 's'], idle_turns: 3, behind: '@b, @s; 3 idle turns' });
  });

  it('redundant_tool_calls: the same tool and input (any key order) by another agent; not the same agent again, not the team tools', () => {
    const events = session(
      ...tool('a', 'grep', { pattern: 'x', path: 'src' }),
      ...tool('b', 'grep', { path: 'src', pattern: 'x' }),
      ...tool('a', 'grep', { pattern: 'x', path: 'src' }),
      ...tool('c', 'grep', { pattern: 'y' }),
      ...tool('a', 'vote', { proposal: 'p', option: 'yes' }),
      ...tool('b', 'vote', { proposal: 'p', option: 'yes' }),
      ...annotate('a', 'x.js', 1),
      ...annotate('b', 'x.js', 1),
      ...tool('a', 'mcp_tool', { q: [1, { z: 1, a: 2 }] }),
      ...tool('c', 'mcp_tool', { q: [1, { a: 2, z: 1 }] }),
    );
    const g = grade(events).redundant_tool_calls!;
    expect(g.value).toBe(2);
    expect(g.calls).toEqual([
      { tool: 'grep', input: '{"path":"src","pattern":"x"}', agent: 'b', first: 'a' },
      { tool: 'mcp_tool', input: '{"q":[1,{"a":2,"z":1}]}', agent: 'c', first: 'a' },
    ]);
  });

  it("work_after_complete: turns begun after the lead's accepted complete; a refused complete ends nothing", () => {
    const refused = tool('lead', 'complete', { status: 'success' }, true);
    const events = session(turn('lead'), ...refused, turn('a'), ...complete(), turn('b'), turn('a', 2));
    expect(grade(events).work_after_complete).toMatchObject({
      value: 2,
      turns: [
        { agent: 'b', turn: 1 },
        { agent: 'a', turn: 2 },
      ],
      behind: '@b turn 1, @a turn 2',
    });
    expect(value(session(turn('lead'), turn('a')), 'work_after_complete')).toBe(0);
  });
});

describe('the common graders', () => {
  it('status, cost, calls, turns, tokens, wall time, tool errors, refusals, cache breaks and cost per finding', () => {
    const events = session(
      turn('lead'),
      call('lead', { usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 1000, cache_creation_input_tokens: 5 } }, 0.02),
      call('lead', { stop_reason: 'refusal' }, 0.01),
      call(
        'a',
        {
          diagnostics: { cache_miss_reason: { type: 'system_changed', cache_missed_input_tokens: 2000 } },
          usage: { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 3000 },
        },
        0.01,
      ),
      ...tool('lead', 'read_file', { path: 'x' }, true),
      ...annotate('lead', 'x.js', 1),
      ...annotate('lead', 'x.js', 2),
      ended('lead', 1, 4250),
      { type: 'run_ended', status: 'limit', reason: 'r', exit_code: 3, summary: '', outputs: {} },
    );
    const g = grade(events);
    expect(g.status).toEqual({ value: 0, status: 'limit' });
    expect(g.cost_usd!.value).toBe(0.04);
    expect(g.calls!.value).toBe(3);
    expect(g.turns!.value).toBe(1);
    expect(g.tokens!.value).toBe(100 + 10 + 1000 + 5 + 2 * 110 + 3000);
    expect(g.wall_s!.value).toBe(4.25);
    expect(g.tool_errors).toEqual({ value: 1, tools: ['read_file'] });
    expect(g.refusals).toEqual({ value: 1, agents: ['lead'] });
    expect(g.cache_breaks).toEqual({ value: 1, agents: ['a'] });
    expect(g.cost_per_finding).toMatchObject({ value: 0.02, findings: 2 });
    expect(value(session(turn('a')), 'status')).toBeNull();
    expect(value(session({ type: 'run_ended', status: 'success', reason: 'r', exit_code: 0, summary: '', outputs: {} }), 'status')).toBe(1);
  });

  it('every grader has a value or null on an empty session, and the team graders come before the common ones', () => {
    const g = grade([]);
    expect(Object.keys(g)).toEqual(GRADER_IDS);
    for (const id of GRADER_IDS) expect(g[id]!.value === null || typeof g[id]!.value === 'number', id).toBe(true);
    expect(TEAM_GRADER_IDS).toEqual([
      'duplicate_findings',
      'marginal_findings',
      'vote_agreement',
      'lead_override',
      'messages_per_decision',
      'unanswered_mentions',
      'idle_agents',
      'redundant_tool_calls',
      'work_after_complete',
    ]);
  });

  it('a total sums the counts and money and averages the shares, over the sessions that have a value', () => {
    const one = grade(session(turn('a'), ...annotate('a', 'x.js', 1), ...annotate('b', 'x.js', 1), call('a', {}, 0.5)));
    const two = grade(session(turn('a'), ...annotate('a', 'x.js', 1), call('a', {}, 0.25)));
    const three = grade(session(turn('a')));
    const total = totalOf([one, two, three]);
    expect(total.cost_usd).toEqual({ value: 0.75, sessions: 3 });
    expect(total.duplicate_findings).toEqual({ value: 0.25, sessions: 2 });
    expect(total.calls).toEqual({ value: 2, sessions: 3 });
    expect(total.vote_agreement).toEqual({ value: null, sessions: 0 });
  });
});

describe('the graders, edge by edge (mutation testing)', () => {
  it("plurality: the option chosen most, none on a tie; people are compared only with an agents' plurality", () => {
    // 'no' is cast first, 'yes' more often: the plurality is 'yes', whatever the order.
    const ordered = session(
      opened('p', ['yes', 'no'], ['a', 'b', 'c', '@o']),
      vote('p', 'a', 'no'),
      vote('p', 'b', 'yes'),
      vote('p', 'c', 'yes'),
      vote('p', '@o', 'yes'),
    );
    expect(grade(ordered).vote_agreement).toMatchObject({ value: 0.6667, people: 1, behind: 'p: 0.6667 of 3 agent votes' });
    const tied = session(opened('p', ['yes', 'no'], ['a', 'b', '@o']), vote('p', 'a', 'no'), vote('p', 'b', 'yes'), vote('p', '@o', 'yes'));
    const g = grade(tied).vote_agreement!;
    expect(g.value).toBe(0.5);
    expect(g.people).toBeUndefined();
    expect(g.proposals).toEqual([{ id: 'p', agents: 0.5, votes: 2 }]);
    const two = session(
      opened('p', ['y', 'n'], ['a', 'b']),
      vote('p', 'a', 'y'),
      vote('p', 'b', 'y'),
      opened('q', ['y', 'n'], ['a', 'b', '@o', '@p']),
      vote('q', 'a', 'y'),
      vote('q', 'b', 'y'),
      vote('q', '@o', 'n'),
      vote('q', '@p', 'y'),
    );
    expect(grade(two).vote_agreement).toMatchObject({ value: 1, people: 0.5, behind: 'p: 1 of 2 agent votes; q: 1 of 2 agent votes' });
    // A person's seat cast through a comment (cast_by) is a person's, whatever its name.
    const cast = session(
      opened('p', ['y', 'n'], ['a', 'b', 'maint']),
      vote('p', 'a', 'y'),
      vote('p', 'b', 'y'),
      { type: 'human_vote', proposal: 'p', seat: 'maint', voter: 'octocat', option: 'n', reason: '', digest: 'd', comment: null, permission: 'write' },
      vote('p', 'maint', 'n'),
    );
    expect(grade(cast).vote_agreement).toMatchObject({ value: 1, people: 0 });
  });

  it('lead_override: a tie is no plurality; a proposal with no winner is judged by its votes; two overrides are both said', () => {
    const tie = session(opened('v', ['a', 'b'], ['x', 'y']), vote('v', 'x', 'a'), vote('v', 'y', 'b'), closed('v', 'b'));
    expect(value(tie, 'lead_override')).toBe(0);
    const noWinner = session(
      opened('v', ['a', 'b'], ['x', 'y']),
      vote('v', 'x', 'a'),
      vote('v', 'y', 'a'),
      closed('v', null),
      ...complete('lead', { pick: 'b', n: 3 }),
    );
    expect(grade(noWinner).lead_override).toMatchObject({ value: 1, overrides: [{ proposal: 'v', voted: 'a', decided: 'b' }] });
    const both = session(opened('v', ['a', 'b'], ['x', 'y']), vote('v', 'x', 'a'), vote('v', 'y', 'a'), closed('v', 'b'), ...complete('lead', { pick: 'a' }));
    expect(grade(both).lead_override).toMatchObject({
      value: 2,
      behind: "v: voted a, the proposal closed b; v: voted b, @lead's complete (output pick) a",
    });
  });

  it("unanswered_mentions: a system message is no mention; another agent's vote or an unrelated tool or event answers nothing", () => {
    const events = session(
      { type: 'message', message: { id: 1, kind: 'system', sender: 'system', recipients: ['c'], text: '@c the vote closed' } },
      message('lead', ['c', 'd'], '@c @d, your view?'),
      ...tool('x', 'vote', { proposal: 'p', option: 'y' }),
      ...tool('c', 'grep', { pattern: 'x' }),
      turn('c', 2),
      { type: 'message', message: { id: 50, kind: 'system', sender: 'd', recipients: [], text: 'not an answer' } },
    );
    const g = grade(events).unanswered_mentions!;
    expect(g.value).toBe(2);
    expect(g.behind).toMatch(/^#\d+ @lead → @c; #\d+ @lead → @d$/);
    // Answers: a proposal or a complete of the named agent.
    expect(value(session(message('a', ['lead'], '@lead see'), ...tool('lead', 'propose', { id: 'p' })), 'unanswered_mentions')).toBe(0);
  });

  it('idle_agents and redundant_tool_calls say what stands behind them; a long input is cut', () => {
    expect(grade(session(turn('a'), ended('a'))).idle_agents!.behind).toBe('@a; 1 idle turn');
    expect(grade(session(turn('a'), message('a', [], 'x'), ended('a'))).idle_agents!.behind).toBe('none; 0 idle turns');
    // A system message does not make its sender (system) an agent that worked.
    expect(grade(session(turn('b'), { type: 'message', message: { id: 9, kind: 'system', sender: 'b', recipients: [], text: 't' } })).idle_agents!.value).toBe(
      1,
    );
    const long = { pattern: 'x'.repeat(200) };
    const g = grade(
      session(...tool('a', 'grep', long), ...tool('b', 'grep', long), ...tool('a', 'read_file', { path: 'p' }), ...tool('c', 'read_file', { path: 'p' })),
    );
    const calls = g.redundant_tool_calls!.calls as { input: string }[];
    expect(calls[0]!.input).toHaveLength(120);
    expect(calls[0]!.input.endsWith('…')).toBe(true);
    expect(calls[1]!.input).toBe('{"path":"p"}');
    expect(g.redundant_tool_calls!.behind).toBe(`@b grep ${calls[0]!.input} (first @a); @c read_file {"path":"p"} (first @a)`);
    expect(grade(session()).redundant_tool_calls!.behind).toBeUndefined();
  });

  it('the order agents came in counts turns and spawns only; the lead is who completed, else the first to take a turn', () => {
    const events = session(
      ...tool('z', 'grep', { pattern: 'early' }),
      turn('a'),
      turn('boss'),
      turn('r'),
      ...annotate('z', 'x.js', 1),
      ...annotate('a', 'x.js', 2),
      ...annotate('r', 'x.js', 2),
      ...complete('boss'),
    );
    expect((grade(events).marginal_findings!.curve as { agent: string }[]).map((c) => c.agent)).toEqual(['a', 'r']);
    expect(grade(events).marginal_findings!.value).toBe(0);
    expect(grade(session(turn('a'), { type: 'run_ended', status: 'error', reason: 'r', exit_code: 1, summary: '', outputs: {} })).status).toEqual({
      value: 0,
      status: 'error',
    });
    expect(grade(session(turn('a'))).status).toEqual({ value: null, status: 'not ended' });
    expect(grade(session(call('a', {}, 0.0400004), ...annotate('a', 'x.js', 1))).cost_per_finding).toEqual({ value: 0.04, findings: 1, cost_usd: 0.04 });
  });

  it("rubric graders: each grader_scored event, with its model's reason and its call's cost; never in place of one of conclave's own", () => {
    const events = session(
      call('grader-clear', {}, 0.003),
      { type: 'grader_scored', grader: 'clear', value: 0.75, reason: 'names the line', model: 'claude-haiku-4-5' },
      { type: 'grader_scored', grader: 'tone', value: null, reason: 'it could not be scored: overloaded', model: 'm' },
      { type: 'grader_scored', grader: 'calls', value: 99, reason: 'a hostile session', model: 'm' },
    );
    const g = grade(events);
    expect(g.clear).toEqual({ value: 0.75, reason: 'names the line', model: 'claude-haiku-4-5', cost_usd: 0.003, behind: 'names the line', rubric: true });
    expect(g.tone).toMatchObject({ value: null, cost_usd: 0 });
    expect(g.calls!.value).toBe(1);
    expect(Object.keys(g).slice(-2)).toEqual(['clear', 'tone']);
    const shown = gradersShown(g);
    expect(shown.map((r) => r.id)).toEqual([...GRADER_IDS, 'clear', 'tone']);
    expect(shown.at(-2)).toMatchObject({ id: 'clear', value: 0.75, means: "the workflow's rubric, scored by a model from 0 to 1" });
    expect(shown[0]).toMatchObject({ id: 'duplicate_findings', value: null, means: expect.stringContaining('the share of findings') });
    // A total averages a rubric over the sessions that scored it.
    const other = grade(session({ type: 'grader_scored', grader: 'clear', value: 0.25, reason: '', model: 'm' }));
    expect(totalOf([g, other, grade([])]).clear).toEqual({ value: 0.5, sessions: 2 });
    expect(totalOf([g, other]).tone).toEqual({ value: null, sessions: 0 });
  });
});
