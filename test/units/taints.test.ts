import { beforeAll, describe, expect, it } from 'vitest';
import { Channel } from '../../src/channel/channel.js';
import { loadMergeTools } from '../../src/channel/documents.js';
import type { Journal } from '../../src/engine/journal.js';
import { Taints } from '../../src/engine/taints.js';
import { TrustPolicy } from '../../src/engine/trust.js';
import { team } from '../channel/team.js';

/**
 * The trust gate's rules, one by one (docs/security.md: untrusted content): who is tainted by what
 * a text carries, and whose "allow" is consent. The e2e tests (attacks-sixth, untrusted) drive the
 * same rules through the CLI; these fix each rule on its own.
 */
const RUN = { tool: 'run_command', input: { command: 'make deploy' } };

function gate(allow = false) {
  const recorded: { agent: string; why: string }[] = [];
  const journal = { append: (e: { type: string; agent: string; why: string }) => recorded.push(e) } as unknown as Journal;
  const taints = new Taints(new TrustPolicy({ name: 'w', agents: {}, kickoff: '' } as never, { untrusted: true, why: 'a fork' }), journal, allow, () => {});
  const people = { voters: ['@octocat'], deadlineMs: 60_000 };
  const channel = new Channel(team(), (event) => taints.noticed(event), people);
  return { taints, channel, recorded };
}

const use = { name: RUN.tool, input: RUN.input };

beforeAll(loadMergeTools);

describe('the trust gate', () => {
  it('a message from a tainted agent taints its recipients; a clean one taints no one', () => {
    const { taints, channel } = gate();
    channel.post('a', '@b clean words');
    expect(taints.has('b')).toBe(false);
    taints.taint('a', 'read a fork');
    channel.post('a', '@b run this');
    expect(taints.has('b')).toBe(true);
    expect(taints.has('c')).toBe(false);
  });

  it('channel_history taints its reader only when a message it shows was written by a tainted agent at the time', () => {
    const { taints, channel } = gate();
    const clean = channel.post('a', 'before')!.message!;
    taints.taint('a', 'read a fork');
    const tainted = channel.post('a', 'after')!.message!;
    taints.shown('c', { messages: [clean.id] });
    expect(taints.has('c')).toBe(false);
    taints.shown('c', { messages: [clean.id, tainted.id] });
    expect(taints.has('c')).toBe(true);
  });

  it("a tainted agent's proposal taints its voters for their writes, and their allow on it is still consent", () => {
    const { taints, channel } = gate();
    taints.taint('a', 'read a fork');
    channel.propose('a', { id: 'deploy', question: 'May I?', options: ['allow', 'deny'], voters: ['b'], action: RUN });
    expect(taints.has('b')).toBe(true);
    channel.vote('b', 'deploy', 'allow');
    // b's own write needs consent (a's consent is a's); a's call has it, once.
    expect(taints.refusal('b', use, false, channel)).toMatch(/^Not run/);
    expect(taints.refusal('a', use, false, channel)).toBeUndefined();
    expect(taints.refusal('a', use, false, channel)).toMatch(/^Not run/);
  });

  it('a voter tainted before the proposal opened, or by anything else before it voted, gives no consent', () => {
    for (const when of ['before', 'between'] as const) {
      const { taints, channel } = gate();
      taints.taint('a', 'read a fork');
      if (when === 'before') taints.taint('b', 'read a fork too');
      channel.propose('a', { id: 'deploy', question: 'May I?', options: ['allow', 'deny'], voters: ['b'], action: RUN });
      if (when === 'between') channel.post('a', '@b please allow it');
      channel.vote('b', 'deploy', 'allow');
      expect(channel.proposal('deploy')!.winner, when).toBe('allow');
      expect(taints.refusal('a', use, false, channel), when).toMatch(/^Not run/);
    }
  });

  it('a vote cast clean counts even if the voter reads a stranger later; a person counts whatever the agents read', () => {
    const { taints, channel } = gate();
    taints.taint('a', 'read a fork');
    channel.propose('a', { id: 'deploy', question: 'May I?', options: ['allow', 'deny'], voters: ['b'], action: RUN });
    channel.vote('b', 'deploy', 'allow');
    taints.taint('b', 'read a fork later');
    expect(taints.refusal('a', use, false, channel)).toBeUndefined();
    const people = gate();
    people.taints.taint('a', 'read a fork');
    people.channel.propose('a', { id: 'deploy', question: 'May I?', options: ['allow', 'deny'], voters: ['@octocat'], action: RUN });
    people.channel.vote('@octocat', 'deploy', 'allow');
    expect(people.taints.refusal('a', use, false, people.channel)).toBeUndefined();
  });

  it('a consent is for the exact call, decided allow: another input, or deny, is refused; read-only tools and untrusted: allow pass', () => {
    const { taints, channel } = gate();
    taints.taint('a', 'read a fork');
    channel.propose('a', { id: 'deploy', question: 'May I?', options: ['allow', 'deny'], voters: ['b'], action: RUN });
    channel.vote('b', 'deploy', 'allow');
    expect(taints.refusal('a', { name: 'run_command', input: { command: 'make other' } }, false, channel)).toMatch(/^Not run/);
    expect(taints.refusal('a', { name: 'read_file', input: {} }, true, channel)).toBeUndefined();
    const allowed = gate(true);
    allowed.taints.taint('a', 'read a fork');
    expect(allowed.taints.refusal('a', use, false, allowed.channel)).toBeUndefined();
    const denied = gate();
    denied.taints.taint('a', 'read a fork');
    denied.channel.propose('a', { id: 'deploy', question: 'May I?', options: ['allow', 'deny'], voters: ['b'], action: RUN });
    denied.channel.vote('b', 'deploy', 'deny');
    expect(denied.taints.refusal('a', use, false, denied.channel)).toMatch(/^Not run/);
  });

  it('documents: an entry or an edit by a tainted agent taints whoever reads the document, and the owner its notice', () => {
    const { taints, channel } = gate();
    channel.documents.open({ name: 'plan', owner: 'c', mode: 'edit', text: 'v1\n' });
    channel.documents.open({ name: 'log', owner: 'lead', mode: 'append', text: '' });
    taints.shown('d', { document: 'plan' });
    expect(taints.has('d')).toBe(false);
    taints.taint('a', 'read a fork');
    channel.documents.append('a', 'log', 'run make deploy');
    taints.shown('b', { document: 'log' });
    expect(taints.has('b')).toBe(true);
    channel.documents.edit('a', 'plan', 1, 'v1\nrun make deploy\n', 'a step');
    // The edit's notice (its diff) reached the owner.
    expect(taints.has('c')).toBe(true);
  });

  it('the agent_tainted event is written once per agent, with the first way it came', () => {
    const { taints, recorded } = gate();
    taints.taint('a', 'first');
    taints.taint('a', 'second');
    expect(recorded.filter((e) => e.agent === 'a').map((e) => e.why)).toEqual(['first']);
  });
});
