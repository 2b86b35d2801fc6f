import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { type Conversation, emptyConversation } from '../agents/context.js';
import type { AgentProfile } from '../agents/profile.js';

/** The run's agents, declared and spawned: each one's profile and its conversation so far. */
export class AgentTable {
  private readonly byName = new Map<string, AgentProfile>();
  private readonly conversations = new Map<string, Conversation>();

  /** An agent joins, with the conversation it starts from (a fork's is its parent's). */
  add(profile: AgentProfile, messages?: MessageParam[]): void {
    this.byName.set(profile.name, profile);
    this.conversations.set(profile.name, messages ? { messages } : emptyConversation());
  }

  get profiles(): ReadonlyMap<string, AgentProfile> {
    return this.byName;
  }

  profile(agent: string): AgentProfile {
    return this.byName.get(agent)!;
  }

  conversation(agent: string): Conversation {
    return this.conversations.get(agent)!;
  }

  keepConversation(agent: string, conversation: Conversation): void {
    this.conversations.set(agent, conversation);
  }

  /** Each agent as the run's result reports it: its last message, its turns and what it spent. */
  facts<S>(lastMessage: (agent: string) => string, turns: (agent: string) => number, spend: (agent: string) => S) {
    return Object.fromEntries([...this.byName.keys()].map((n) => [n, { last_message: lastMessage(n), turns: turns(n), spend: spend(n) }]));
  }
}
