import { describe, expect, it } from 'vitest';
import type { AgentProfile } from '../../src/agents/profile.js';
import type { ChannelEvent } from '../../src/channel/channel-events.js';
import { Channel } from '../../src/channel/channel.js';
import { Reservations } from '../../src/engine/ceilings/reservation.js';
import { FORK, SpawnBudgetReached, Spawner, type SpawnerHooks } from '../../src/engine/teams/spawner.js';
import { CallAborted } from '../../src/provider/provider-errors.js';
import { workflowOf } from '../helpers/workflow-of.js';

const TEAM = (limits = 'max_agents: 6', checker = '') => `
name: spawning
limits: { ${limits} }
agents:
  lead: { role: manager, spawns: [manager_t, checker], fork: true }
  helper: { role: worker }
templates:
  manager_t: { role: manager, system: Manage., spawns: [checker] }
  checker: { role: worker, system: Check., ${checker} }
kickoff: Go.
`;

/** A spawner over a real channel, with what it records and what each agent has spent in hand. */
async function spawnerOf(text = TEAM()) {
  const workflow = await workflowOf(text);
  const events: ChannelEvent[] = [];
  const channel = new Channel(workflow.graph, (e) => events.push(e));
  const recorded: { agent: string; status: string; reason: string }[] = [];
  const registered: AgentProfile[] = [];
  const conversations = new Map<string, unknown>();
  const spent = new Map<string, number>();
  const profiles = new Map<string, AgentProfile>();
  const hooks: SpawnerHooks = {
    register: (profile, messages) => (registered.push(profile), profiles.set(profile.name, profile), conversations.set(profile.name, messages)),
    profile: (agent) => profiles.get(agent) ?? ({ name: agent, role: 'manager', isLead: agent === 'lead', reportsTo: null } as unknown as AgentProfile),
    spent: (agent) => spent.get(agent) ?? 0,
    record: (e) => {
      expect(e.type).toBe('agent_ended');
      recorded.push({ agent: e.agent, status: e.status, reason: e.reason });
    },
  };
  const spawner = new Spawner({ workflow, scope: {} }, channel, workflow.graph.members.size, hooks);
  const told = (agent: string) =>
    events.flatMap((e) => (e.type === 'message' && e.message.sender === 'system' && e.message.recipients.includes(agent) ? [e.message.text] : []));
  return { spawner, channel, events, recorded, registered, spent, told, conversations };
}

const signal = () => new AbortController().signal;
const worst = (usd: number) => ({ usd, tokens: 0 });

describe('spawn', () => {
  it('names instances TEMPLATE-N in order, each reporting to its spawner with its task, and at the depth below it', async () => {
    const { spawner, channel, registered } = await spawnerOf();
    expect(spawner.spawn('lead', 'checker', ['a', 'b'])).toEqual(['checker-1', 'checker-2']);
    expect(spawner.spawn('lead', 'manager_t', ['m'])).toEqual(['manager_t-1']);
    expect(spawner.spawn('manager_t-1', 'checker', ['c'])).toEqual(['checker-3']);
    expect(spawner.childrenOf('lead')).toEqual(['checker-1', 'checker-2', 'manager_t-1']);
    expect(spawner.childrenOf('manager_t-1')).toEqual(['checker-3']);
    expect(spawner.childrenOf('helper')).toEqual([]);
    expect(registered.map((p) => [p.name, p.reportsTo])).toEqual([
      ['checker-1', 'lead'],
      ['checker-2', 'lead'],
      ['manager_t-1', 'lead'],
      ['checker-3', 'manager_t-1'],
    ]);
    expect(channel.deliver('checker-2').messages.map((m) => m.text)).toEqual(['b']);
    expect(spawner.isSpawned('checker-3')).toBe(true);
    expect(spawner.isSpawned('helper')).toBe(false);
  });

  it('skips a number whose name an agent has already', async () => {
    const { spawner } = await spawnerOf();
    expect(spawner.spawn('lead', 'checker', ['x'], { name: 'checker_two' })).toEqual(['checker_two']);
    expect(spawner.spawn('lead', 'checker', ['a'])).toEqual(['checker-1']);
  });

  it('refuses a template the agent may not spawn, naming those it may', async () => {
    const { spawner } = await spawnerOf();
    expect(() => spawner.spawn('lead', 'nope', ['a'])).toThrow('you may spawn "manager_t", "checker", not "nope"');
    expect(() => spawner.spawn('helper', 'checker', ['a'])).toThrow('you may not spawn agents');
    spawner.spawn('lead', 'checker', ['a']);
    expect(() => spawner.spawn('checker-1', 'checker', ['a'])).toThrow('you may not spawn agents');
  });

  it('a team of exactly max_agents is allowed, one more is refused', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 5'));
    expect(() => spawner.spawn('lead', 'checker', ['a', 'b', 'c', 'd'])).toThrow(
      'spawn refused: limits.max_agents is 5 and the run has 2 agents; 4 more would pass it',
    );
    expect(spawner.spawn('lead', 'checker', ['a', 'b', 'c'])).toHaveLength(3);
    expect(() => spawner.spawn('lead', 'checker', ['d'])).toThrow('limits.max_agents is 5 and the run has 5 agents; 1 more would pass it');
  });

  it('refuses past max_depth, counting from the declared agents', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9, max_depth: 2'));
    spawner.spawn('lead', 'manager_t', ['m']);
    expect(spawner.spawn('manager_t-1', 'checker', ['c'])).toEqual(['checker-1']);
    const deep = (await spawnerOf(TEAM('max_agents: 9, max_depth: 1'))).spawner;
    deep.spawn('lead', 'manager_t', ['m']);
    expect(() => deep.spawn('manager_t-1', 'checker', ['c'])).toThrow('spawn refused: limits.max_depth is 1, and agents you spawn would be 2 levels deep');
  });

  it('a chosen name is checked, and names one agent only', async () => {
    const { spawner } = await spawnerOf();
    expect(() => spawner.spawn('lead', 'checker', ['a'], { name: 'helper' })).toThrow('"helper" cannot be a new agent\'s name: an agent has that name already');
    expect(() => spawner.spawn('lead', 'checker', ['a'], { name: 'checker-7' })).toThrow('names of the form TEMPLATE-N');
    expect(() => spawner.spawn('lead', 'checker', ['a', 'b'], { name: 'solo' })).toThrow(
      'name gives one agent its name, and you gave 2 tasks: spawn one task with a name, or leave name out',
    );
  });

  it("takes max_turns and budget_usd from the template's limits unless the spawn gives its own", async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9', 'limits: { max_turns: 3, budget_usd: 0.5 }'));
    spawner.spawn('lead', 'checker', ['a']);
    spawner.spawn('lead', 'checker', ['b'], { maxTurns: 7 });
    expect(spawner.maxTurnsOf('checker-1')).toBe(3);
    expect(spawner.maxTurnsOf('checker-2')).toBe(7);
    expect(spawner.maxTurnsOf('lead')).toBeUndefined();
  });

  it('a capped agent cannot give its children more than it has left; a cancelled child gives back what it did not spend', async () => {
    const { spawner, spent } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m'], { budgetUsd: 1 });
    spent.set('manager_t-1', 0.25);
    expect(() => spawner.spawn('manager_t-1', 'checker', ['a', 'b'], { budgetUsd: 0.4 })).toThrow(
      'spawn refused: 2 × $0.4 is more than the $0.7500 left of your budget_usd',
    );
    spawner.spawn('manager_t-1', 'checker', ['a'], { budgetUsd: 0.5 });
    expect(() => spawner.spawn('manager_t-1', 'checker', ['b'], { budgetUsd: 0.3 })).toThrow('$0.2500 left');
    spent.set('checker-1', 0.1);
    spawner.cancel('manager_t-1', 'checker-1');
    expect(spawner.spawn('manager_t-1', 'checker', ['b'], { budgetUsd: 0.65 })).toEqual(['checker-2']);
    // An uncapped child counts what it spent; a child below an uncapped agent, the nearest cap above.
    spawner.spawn('manager_t-1', 'checker', ['c']);
    spent.set('checker-3', 0.05);
    expect(() => spawner.spawn('manager_t-1', 'checker', ['d'], { budgetUsd: 0.0001 })).toThrow('$0.0000 left');
    // No cap anywhere: any budget may be given.
    expect(spawner.spawn('lead', 'checker', ['e'], { budgetUsd: 1000 })).toEqual(['checker-4']);
  });
});

describe("a spawned subtree's budget_usd, as a ceiling", () => {
  it('an uncapped agent has no ceiling of its own; a capped one has its own and each capped one above it', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m'], { budgetUsd: 1 });
    spawner.spawn('manager_t-1', 'checker', ['a']);
    spawner.spawn('manager_t-1', 'checker', ['b'], { budgetUsd: 0.5 });
    spawner.spawn('lead', 'checker', ['c']);
    expect(spawner.ceilingsOf('lead')).toHaveLength(0);
    expect(spawner.ceilingsOf('checker-3')).toHaveLength(0);
    expect(spawner.ceilingsOf('checker-1')).toHaveLength(1);
    expect(spawner.ceilingsOf('checker-2')).toHaveLength(2);
  });

  it("refuses a call past its own budget with what it spent, and past a parent's naming the parent", async () => {
    const { spawner, spent } = await spawnerOf(TEAM('max_agents: 9'));
    const r = new Reservations();
    spawner.spawn('lead', 'manager_t', ['m'], { budgetUsd: 1 });
    spawner.spawn('manager_t-1', 'checker', ['a'], { budgetUsd: 0.5 });
    spent.set('checker-1', 0.2);
    await expect(r.reserve(spawner.ceilingsOf('checker-1'), worst(0.31), signal())).rejects.toThrow(
      new SpawnBudgetReached('reached its budget_usd ($0.2000 of $0.5 spent; the next call could cost up to $0.3100)'),
    );
    spent.set('manager_t-1', 0.7);
    await expect(r.reserve(spawner.ceilingsOf('checker-1'), worst(0.2), signal())).rejects.toThrow(
      'reached its budget_usd ($0.9000 of $1 spent by @manager_t-1 and the agents below it; the next call could cost up to $0.2000)',
    );
    await (await r.reserve(spawner.ceilingsOf('checker-1'), worst(0.1), signal()))(0);
  });

  it("a call under a capped parent waits while a call of the parent's subtree is in flight, and goes when it settles for less", async () => {
    const { spawner, spent } = await spawnerOf(TEAM('max_agents: 9'));
    const r = new Reservations();
    spawner.spawn('lead', 'manager_t', ['m'], { budgetUsd: 1 });
    spawner.spawn('manager_t-1', 'checker', ['a', 'b']);
    const first = await r.reserve(spawner.ceilingsOf('checker-1'), worst(0.6), signal());
    let second: unknown;
    const waiting = r.reserve(spawner.ceilingsOf('checker-2'), worst(0.6), signal()).then((s) => (second = s));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(second, 'waits: the call in flight holds 0.6 of the parent’s 1').toBeUndefined();
    spent.set('checker-1', 0.1);
    await first(0.1);
    await waiting;
    expect(second).toBeTypeOf('function');
  });

  it('a call under a capped parent that can never fit is refused once the subtree has nothing in flight', async () => {
    const { spawner, spent } = await spawnerOf(TEAM('max_agents: 9'));
    const r = new Reservations();
    spawner.spawn('lead', 'manager_t', ['m'], { budgetUsd: 1 });
    spawner.spawn('manager_t-1', 'checker', ['a', 'b']);
    const first = await r.reserve(spawner.ceilingsOf('checker-1'), worst(0.6), signal());
    const waiting = r.reserve(spawner.ceilingsOf('checker-2'), worst(0.6), signal());
    spent.set('checker-1', 0.5);
    await first(0.5);
    await expect(waiting).rejects.toThrow(SpawnBudgetReached);
  });
});

describe('fork', () => {
  const point = {
    messages: [
      { role: 'user' as const, content: 'start' },
      {
        role: 'assistant' as const,
        content: [
          { type: 'tool_use' as const, id: 't1', name: 'fork', input: {} },
          { type: 'tool_use' as const, id: 't2', name: 'read_file', input: {} },
        ],
      },
    ],
    toolUseId: 't1',
  };

  it('makes AGENT-fork-N with its conversation, the fork tool answered with who it is and the others not run', async () => {
    const { spawner, registered, conversations } = await spawnerOf();
    expect(spawner.fork('lead', ['x', 'y'], point)).toEqual(['lead-fork-1', 'lead-fork-2']);
    const fork = registered[0]!;
    expect(fork).toMatchObject({ name: 'lead-fork-1', role: 'worker', isLead: false, reportsTo: 'lead' });
    expect(spawner.childrenOf('lead')).toEqual(['lead-fork-1', 'lead-fork-2']);
    expect(conversations.get('lead')).toBeUndefined();
    expect(conversations.get('lead-fork-2')).toEqual([
      ...point.messages,
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 't1',
            content:
              'You are @lead-fork-2, a fork of @lead made at this call: you have its conversation so far, and one task, below. Do only that task; your ' +
              'answer goes to @lead. (The agent you were until now goes on without you.)',
          },
          { type: 'tool_result', tool_use_id: 't2', content: 'Not run in this fork.' },
        ],
      },
    ]);
    // A fork made where the last message is no assistant's tool calls answers none.
    spawner.fork('lead', ['z'], { messages: [{ role: 'user', content: 'start' }], toolUseId: 't9' });
    expect(conversations.get('lead-fork-3')).toEqual([
      { role: 'user', content: 'start' },
      { role: 'user', content: [] },
    ]);
    spawner.fork('lead', ['w'], { messages: [{ role: 'assistant', content: 'text only' }], toolUseId: 't9' });
    expect((conversations.get('lead-fork-4') as { content: unknown }[]).at(-1)).toEqual({ role: 'user', content: [] });
    expect(spawner.maxTurnsOf('lead-fork-1')).toBeUndefined();
  });

  it('counts forks against max_agents and max_depth, as spawns', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 3, max_depth: 1'));
    expect(() => spawner.fork('lead', ['x', 'y'], point)).toThrow('fork refused: limits.max_agents is 3 and the run has 2 agents; 2 more would pass it');
    spawner.fork('lead', ['x'], point);
    const deep = (await spawnerOf(TEAM('max_agents: 9, max_depth: 1'))).spawner;
    deep.fork('lead', ['x'], point);
    expect(() => deep.fork('lead-fork-1', ['y'], point)).toThrow('fork refused: limits.max_depth is 1, and agents you fork would be 2 levels deep');
  });

  it('refuses an agent without fork: true, and a fork of a fork may fork when its root may', async () => {
    const { spawner } = await spawnerOf();
    expect(() => spawner.fork('helper', ['x'], point)).toThrow('you may not fork (set fork: true in the workflow)');
    spawner.fork('lead', ['x'], point);
    expect(spawner.fork('lead-fork-1', ['y'], point)).toEqual(['lead-fork-1-fork-1']);
    // A fork may spawn what its root may.
    expect(spawner.spawn('lead-fork-1', 'checker', ['c'])).toEqual(['checker-1']);
    spawner.spawn('lead', 'checker', ['d']);
    expect(() => spawner.fork('checker-2', ['z'], point)).toThrow('you may not fork');
  });

  it("a fork of a spawned agent keeps that agent's max_turns", async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9', 'fork: true'));
    spawner.spawn('lead', 'checker', ['a'], { maxTurns: 2 });
    spawner.fork('checker-1', ['x'], point);
    expect(spawner.maxTurnsOf('checker-1-fork-1')).toBe(2);
    expect(FORK).toBe('(fork)');
  });
});

describe('cancel, end and stop', () => {
  it('cancels the target and everything below it, deepest first, aborting their turns; the spawner is told when another cancelled', async () => {
    const { spawner, recorded, told } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m']);
    spawner.spawn('manager_t-1', 'checker', ['a', 'b']);
    const turn = spawner.signalOf('checker-2', signal());
    expect(spawner.cancel('lead', 'manager_t-1')).toBe('Cancelled @manager_t-1 and the 2 agents below it: they take no more turns.');
    expect(recorded).toEqual([
      { agent: 'checker-2', status: 'cancelled', reason: 'cancelled by @lead' },
      { agent: 'checker-1', status: 'cancelled', reason: 'cancelled by @lead' },
      { agent: 'manager_t-1', status: 'cancelled', reason: 'cancelled by @lead' },
    ]);
    expect(turn.aborted).toBe(true);
    expect(spawner.isEnded('checker-1')).toBe(true);
    expect(told('lead')).toEqual([]);
  });

  it('a grandchild cancelled by an ancestor: its own spawner is told', async () => {
    const { spawner, told } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m']);
    spawner.spawn('manager_t-1', 'checker', ['a', 'b']);
    expect(spawner.cancel('lead', 'checker-1')).toBe('Cancelled @checker-1: it takes no more turns.');
    expect(told('manager_t-1')).toEqual(['@lead cancelled @checker-1.']);
    expect(spawner.cancel('manager_t-1', 'checker-2')).toBe('Cancelled @checker-2: it takes no more turns.');
  });

  it('refuses to cancel what the caller did not spawn, or what ended', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m']);
    spawner.spawn('manager_t-1', 'checker', ['a']);
    spawner.spawn('lead', 'checker', ['b']);
    expect(() => spawner.cancel('manager_t-1', 'checker-2')).toThrow('you can cancel only agents you spawned, or spawned below them; @checker-2 is not one');
    expect(() => spawner.cancel('lead', 'helper')).toThrow('@helper is not one');
    expect(() => spawner.cancel('checker-1', 'manager_t-1')).toThrow('is not one');
    spawner.cancel('lead', 'checker-2');
    expect(() => spawner.cancel('lead', 'checker-2')).toThrow('@checker-2 has ended already');
    expect(spawner.cancel('lead', 'manager_t-1')).toBe('Cancelled @manager_t-1 and the 1 agent below it: they take no more turns.');
  });

  it("ends a spawned agent that failed, once, telling its spawner; a declared agent's end is the run's", async () => {
    const { spawner, recorded, told } = await spawnerOf();
    spawner.spawn('lead', 'checker', ['a']);
    const turn = spawner.signalOf('checker-1', signal());
    expect(spawner.end('checker-1', 'failed', 'failed: boom')).toBe(true);
    expect(turn.aborted).toBe(true);
    expect(spawner.end('checker-1', 'limit', 'again')).toBe(false);
    expect(spawner.end('helper', 'failed', 'x')).toBe(false);
    expect(recorded).toEqual([{ agent: 'checker-1', status: 'failed', reason: 'failed: boom' }]);
    expect(told('lead')).toEqual(['@checker-1 failed: boom. It takes no more turns.']);
  });

  it('stops every spawned agent still going when the run ends, deepest first', async () => {
    const { spawner, recorded } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m']);
    spawner.spawn('manager_t-1', 'checker', ['a']);
    spawner.spawn('lead', 'checker', ['b']);
    spawner.end('checker-2', 'failed', 'failed: x');
    spawner.stopAll('limit reached');
    expect(recorded.slice(1)).toEqual([
      { agent: 'checker-1', status: 'stopped', reason: 'the run ended: limit reached' },
      { agent: 'manager_t-1', status: 'stopped', reason: 'the run ended: limit reached' },
    ]);
  });

  it("a declared agent's signal is the run's; a spawned one's also its own", async () => {
    const { spawner } = await spawnerOf();
    const run = new AbortController();
    expect(spawner.signalOf('lead', run.signal)).toBe(run.signal);
    spawner.spawn('lead', 'checker', ['a']);
    const own = spawner.signalOf('checker-1', run.signal);
    expect(own.aborted).toBe(false);
    run.abort();
    expect(own.aborted).toBe(true);
  });

  it("the tools schedule the change at once, after the tool's own work", async () => {
    const { spawner } = await spawnerOf();
    let changed = 0;
    const tools = (await spawnerOf()).spawner.toolsFor('lead', () => changed++);
    expect(tools.spawn!('checker', ['a'])).toEqual(['checker-1']);
    expect(changed).toBe(0);
    await Promise.resolve();
    expect(changed).toBe(1);
    tools.cancel!('checker-1');
    await Promise.resolve();
    expect(changed).toBe(2);
    expect(spawner.childrenOf('lead')).toEqual([]);
  });

  it('a waiting call whose agent is cancelled ends as aborted', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9'));
    const r = new Reservations();
    spawner.spawn('lead', 'manager_t', ['m'], { budgetUsd: 1 });
    spawner.spawn('manager_t-1', 'checker', ['a', 'b']);
    const first = await r.reserve(spawner.ceilingsOf('checker-1'), worst(0.6), signal());
    const waiting = r.reserve(spawner.ceilingsOf('checker-2'), worst(0.6), spawner.signalOf('checker-2', signal()));
    spawner.cancel('lead', 'manager_t-1');
    await expect(waiting).rejects.toThrow(CallAborted);
    await first(0);
  });

  it('a cancel passes over agents below that ended already', async () => {
    const { spawner, recorded } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'manager_t', ['m']);
    spawner.spawn('manager_t-1', 'checker', ['a', 'b']);
    spawner.end('checker-1', 'limit', 'ran out of its turns');
    expect(spawner.cancel('lead', 'manager_t-1')).toBe('Cancelled @manager_t-1 and the 1 agent below it: they take no more turns.');
    expect(recorded.map((r) => `${r.agent} ${r.status}`)).toEqual(['checker-1 limit', 'checker-2 cancelled', 'manager_t-1 cancelled']);
  });

  it('a fork tool schedules the change too', async () => {
    const { spawner } = await spawnerOf();
    let changed = 0;
    const tools = spawner.toolsFor('lead', () => changed++);
    expect(tools.fork!(['x'], { messages: [], toolUseId: 't' })).toEqual(['lead-fork-1']);
    await Promise.resolve();
    expect(changed).toBe(1);
  });
});

describe('the edges', () => {
  it('a subtree may spend its budget_usd to the last cent: a call that fits exactly is held', async () => {
    const { spawner, spent } = await spawnerOf(TEAM('max_agents: 9'));
    spawner.spawn('lead', 'checker', ['a'], { budgetUsd: 1 });
    spent.set('checker-1', 0.5);
    await (await new Reservations().reserve(spawner.ceilingsOf('checker-1'), worst(0.5), signal()))(0);
  });

  it('a budget refusal ends the agent (limit), not the run', async () => {
    expect(new SpawnBudgetReached('x').ending).toBe('limit');
  });

  it('max_depth is 3 when the workflow does not say', async () => {
    const { spawner } = await spawnerOf(TEAM('max_agents: 9', 'fork: true'));
    spawner.spawn('lead', 'checker', ['a']);
    spawner.fork('checker-1', ['b'], { messages: [], toolUseId: 't' });
    spawner.fork('checker-1-fork-1', ['c'], { messages: [], toolUseId: 't' });
    expect(() => spawner.fork('checker-1-fork-1-fork-1', ['d'], { messages: [], toolUseId: 't' })).toThrow('limits.max_depth is 3');
  });
});
