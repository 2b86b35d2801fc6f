import type { TeamGraph } from '../workflow/graph.js';
import { ChannelError } from './channel-error.js';
import type { ChannelEvent } from './channel-events.js';
import type { ChannelSnapshot, Delivery } from './channel-types.js';
import { Deliveries } from './deliveries.js';
import { Documents } from './documents.js';
import { Inboxes } from './inboxes.js';
import { Members } from './members.js';
import { lastMessages, SYSTEM, type Message, type MessageKind } from './message.js';
import {
  checkCancel,
  checkVote,
  closedText,
  isAgentVoter,
  openedText,
  outcome,
  specify,
  viewOf,
  type Outcome,
  type PeoplePolicy,
  type ProposalRequest,
  type ProposalState,
  type ProposalView,
} from './proposal.js';
import { ProposalBook } from './proposal-book.js';
import { route, unknownMentionNotice } from './routing.js';

export type { ProposalView } from './proposal.js';
export type { ChannelSnapshot, Delivery } from './channel-types.js';
export type { DocumentView } from './documents.js';

/**
 * One run's shared channel (docs/design.md: routing, turns): messages with recipients resolved when written,
 * an inbox per agent, and proposals. Pure: no I/O. Every change is a ChannelEvent, applied
 * through `apply` and passed to the listener, so that `Channel.replay` rebuilds it exactly.
 */
export class Channel {
  private readonly members: Members;
  private readonly messages: Message[] = [];
  private readonly inboxes: Inboxes;
  private readonly proposals = new ProposalBook();
  private readonly docs = new Documents(
    (event) => this.emit(event),
    (text, recipients) => this.postSystem(text, recipients),
    (agent) => this.requireAgent(agent),
  );
  private readonly lastBySender = new Map<string, Message>();
  private readonly deliveries: Deliveries;
  private turns = 0;

  constructor(
    team: TeamGraph,
    private readonly listener: (event: ChannelEvent) => void = () => {},
    /** The workflow's `people:`, whom a proposal may name as voters. */
    private readonly people?: PeoplePolicy,
  ) {
    this.members = new Members(team);
    this.inboxes = new Inboxes(this.members.names, (agent) => this.members.rankOf(agent));
    this.deliveries = new Deliveries(
      this.inboxes,
      (id) => this.messages[id - 1]!,
      (m) => (m.kind === 'kickoff' ? -2 : m.kind === 'system' ? -1 : this.members.rankOf(m.sender)),
      (agent, through) => this.emit({ type: 'ack', agent, through }),
    );
  }

  /** Rebuilds a channel from the events another one emitted. */
  static replay(team: TeamGraph, events: Iterable<ChannelEvent>, listener?: (event: ChannelEvent) => void): Channel {
    const channel = new Channel(team, listener);
    for (const event of events) channel.apply(event);
    return channel;
  }

  /** The kickoff, from `system`; without mentions it goes to the lead. */
  postKickoff(text: string): Message {
    return this.postRouted('kickoff', SYSTEM, text).message!;
  }

  /**
   * An agent's message, routed by its mentions. Empty text posts nothing. A mention of a name
   * that is no agent brings the sender a notice naming the agents that exist.
   */
  post(sender: string, text: string): { message?: Message; notice?: Message } {
    this.requireAgent(sender);
    if (text.trim() === '') return {};
    return this.postRouted('agent', sender, text);
  }

  /** A spawned agent joins, reporting to its spawner; `task` is its first message, from the spawner. */
  join(spawned: { agent: string; template: string; role: 'manager' | 'worker'; parent: string; depth: number }, task: string): Message {
    if (this.members.names.has(spawned.agent) || !this.members.names.has(spawned.parent))
      throw new ChannelError(
        `cannot start @${spawned.agent} for @${spawned.parent}: ` +
          (this.members.names.has(spawned.agent) ? 'an agent has that name already' : `@${spawned.parent} is no agent`),
      );
    this.emit({ type: 'agent_spawned', ...spawned });
    return this.write('agent', spawned.parent, task, [spawned.agent]);
  }

  /** A message from conclave to chosen agents. */
  postSystem(text: string, recipients: readonly string[]): Message {
    return this.write('system', SYSTEM, text, [...new Set(recipients)]);
  }

  propose(proposer: string, request: ProposalRequest): ProposalView {
    this.requireAgent(proposer);
    const spec = specify(request, proposer, [...this.members.names], (id) => this.proposals.has(id), this.proposals.nextId(), this.turns, this.people);
    this.emit({ type: 'proposal_opened', proposal: spec });
    this.postSystem(
      openedText(spec),
      [...spec.voters, ...(spec.advisers ?? [])].filter((v) => v !== proposer && isAgentVoter(v)),
    );
    return this.proposals.view(spec.id)!;
  }

  vote(voter: string, proposalId: string, option: string, reason = ''): ProposalView {
    const p = this.proposals.require(proposalId);
    checkVote(p, voter, option);
    this.emit({ type: 'vote', proposal: p.id, voter, option, reason });
    const settled = outcome(p, false);
    if (settled) this.close(p, settled);
    return viewOf(p);
  }

  cancel(agent: string, proposalId: string): ProposalView {
    const p = this.proposals.require(proposalId);
    checkCancel(p, agent);
    this.close(p, { status: 'cancelled', reason: `cancelled by @${agent}` });
    return viewOf(p);
  }

  /** A turn of `agent` ended: counts toward proposal deadlines, which may close proposals. */
  turnEnded(agent: string): void {
    this.requireAgent(agent);
    this.emit({ type: 'turn_counted', agent });
    for (const p of this.proposals.open()) {
      if (p.deadline_turns !== null && this.turns - p.opened_at_turn >= p.deadline_turns) {
        this.close(p, outcome(p, true)!);
      }
    }
  }

  /** Closes a proposal with the votes cast so far, as when no voter is left who can vote. */
  expire(proposalId: string): ProposalView {
    const p = this.proposals.require(proposalId);
    if (p.status === 'open') this.close(p, outcome(p, true)!);
    return viewOf(p);
  }

  /** The documents with an owner (docs/workflow.md: documents): their changes are this channel's events. */
  get documents(): Documents {
    return this.docs;
  }

  // --- inboxes -------------------------------------------------------------------------------

  /** Deliveries (deliveries.ts): the messages handed to a turn, and when they are handled. */
  deliver(agent: string, one = false): Readonly<Delivery> {
    return this.deliveries.deliver(agent, one);
  }

  steer(agent: string, through?: number): { messages: Message[]; through: number } {
    return this.deliveries.steer(agent, through);
  }

  acknowledge(agent: string): void {
    this.deliveries.acknowledge(agent);
  }

  release(agent: string): void {
    this.deliveries.release(agent);
  }

  hasMember(name: string): boolean {
    return this.members.mentionable.has(name);
  }

  hasUnread(agent: string): boolean {
    return this.inboxes.of(agent).unreadCount > 0;
  }

  unreadCount(agent: string): number {
    return this.inboxes.of(agent).unreadCount;
  }

  /** The agents with unread messages, in roster order. */
  withUnread(): readonly string[] {
    return this.inboxes.withUnread();
  }

  // --- reading -------------------------------------------------------------------------------

  get length(): number {
    return this.messages.length;
  }

  get turnCount(): number {
    return this.turns;
  }

  message(id: number): Message | undefined {
    return this.messages[id - 1];
  }

  /** Earlier messages for `channel_history`: the last `last` (default 20), from `sender` if given. */
  history(options: { sender?: string; last?: number } = {}): Message[] {
    return lastMessages(this.messages, options);
  }

  lastMessageFrom(agent: string): Message | undefined {
    return this.lastBySender.get(agent);
  }

  proposal(id: string): ProposalView | undefined {
    return this.proposals.view(id);
  }

  allProposals(): ProposalView[] {
    return this.proposals.all();
  }

  /** Open proposals and the voters each still waits on. */
  waitingVoters(): { proposal: string; voters: string[] }[] {
    return this.proposals.waitingVoters();
  }

  snapshot(): ChannelSnapshot {
    return {
      messages: this.messages.map((m) => ({ ...m, recipients: [...m.recipients] })),
      inboxes: this.inboxes.toJSON(),
      proposals: this.allProposals(),
      turns: this.turns,
    };
  }

  // --- the one way state changes -------------------------------------------------------------

  private emit(event: ChannelEvent): void {
    this.apply(event);
    this.listener(event);
  }

  private apply(event: ChannelEvent): void {
    switch (event.type) {
      case 'message': {
        const m = event.message;
        if (m.id !== this.messages.length + 1) throw new Error(`message #${m.id} out of order: expected #${this.messages.length + 1}`);
        this.messages.push(m);
        for (const r of m.recipients) this.inboxes.push(r, m.id);
        if (m.kind === 'agent') this.lastBySender.set(m.sender, m);
        return;
      }
      case 'ack':
        return this.inboxes.acknowledge(event.agent, event.through);
      case 'proposal_opened':
      case 'vote':
      case 'proposal_closed':
        return this.proposals.apply(event);
      case 'turn_counted':
        this.turns++;
        return;
      case 'document_opened':
      case 'document_changed':
      case 'document_appended':
      case 'edit_proposed':
      case 'edit_closed':
        return this.docs.apply(event);
      case 'agent_spawned':
        this.members.add({ name: event.agent, role: event.role, reportsTo: event.parent });
        this.inboxes.add(event.agent);
        return;
    }
  }

  // --- helpers -------------------------------------------------------------------------------

  private postRouted(kind: MessageKind, sender: string, text: string): { message?: Message; notice?: Message } {
    const { recipients, unknown } = route(this.members, this.members.mentionable, kind, sender, text, this.people?.voters);
    const message = this.write(kind, sender, text, recipients);
    if (unknown.length === 0 || kind !== 'agent') return { message };
    return { message, notice: this.postSystem(unknownMentionNotice(unknown, this.members.names), [sender]) };
  }

  private write(kind: MessageKind, sender: string, text: string, recipients: string[]): Message {
    const message: Message = { id: this.messages.length + 1, kind, sender, text, recipients };
    this.emit({ type: 'message', message });
    return message;
  }

  /** Closes a proposal (decided, without a decision, or cancelled by its proposer), and tells its proposer and voters. */
  private close(p: ProposalState, result: Outcome | { status: 'cancelled'; reason: string }): void {
    const winner = result.status === 'decided' ? result.winner : null;
    this.emit({ type: 'proposal_closed', proposal: p.id, status: result.status, winner, reason: 'reason' in result ? result.reason : null });
    this.postSystem(closedText(p), [p.proposer, ...p.voters.filter(isAgentVoter), ...(p.advisers ?? [])]);
  }

  private requireAgent(agent: string): void {
    this.inboxes.of(agent);
  }
}
