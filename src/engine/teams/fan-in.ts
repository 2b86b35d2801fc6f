import type { AgentProfile } from '../../agents/profile.js';
import type { Channel } from '../../channel/channel.js';
import type { Spawner } from './spawner.js';

interface TeamState {
  channel: Channel;
  spawner: Spawner;
  profiles: ReadonlyMap<string, AgentProfile>;
  running: ReadonlySet<string>;
  hasTurnsLeft(name: string): boolean;
}

/**
 * Fan-in (docs/design.md: turns): a manager with `wake: all` waits while the agents its last
 * message addressed still have that work running or queued, and is then woken once with every
 * answer; an agent that spawned others waits for them the same way. A sub-manager, or a spawned
 * agent that spawned in turn, counts as busy while the work it handed out is.
 */
export class FanIn {
  constructor(private readonly team: TeamState) {}

  waits(name: string): boolean {
    const { profiles, spawner } = this.team;
    return (profiles.get(name)!.wake === 'all' || spawner.childrenOf(name).length > 0) && this.delegatesBusy(name, new Set([name]));
  }

  private delegatesBusy(manager: string, seen: Set<string>): boolean {
    const { channel, spawner, profiles, running, hasTurnsLeft } = this.team;
    const last = channel.lastMessageFrom(manager);
    return [...(last?.recipients ?? []), ...spawner.childrenOf(manager)].some((r) => {
      if (seen.has(r)) return false;
      seen.add(r);
      if (running.has(r) || (channel.hasUnread(r) && hasTurnsLeft(r))) return true;
      return (profiles.get(r)?.role === 'manager' || spawner.childrenOf(r).length > 0) && this.delegatesBusy(r, seen);
    });
  }
}
