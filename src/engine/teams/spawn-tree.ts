import type { LocalCeiling } from '../ceilings/reservation.js';

/** An agent started at run time, as the spawner keeps it. */
export interface Spawned {
  template: string;
  parent: string;
  depth: number;
  /** Aborts this agent's turn in flight when it is cancelled. */
  controller: AbortController;
  maxTurns?: number;
  /** Dollars for it and every agent below it. */
  budgetUsd?: number;
  /** That budget_usd as a ceiling over the calls of it and every agent below it. */
  carve?: LocalCeiling;
}

/** Who spawned whom: each spawned agent under its parent, in the order they were spawned (a declared agent is a root). */
export class SpawnTree {
  private readonly spawned = new Map<string, Spawned>();
  private readonly children = new Map<string, string[]>();

  add(agent: string, entry: Spawned): void {
    this.spawned.set(agent, entry);
    const siblings = this.children.get(entry.parent) ?? [];
    this.children.set(entry.parent, siblings);
    siblings.push(agent);
  }

  get(agent: string): Spawned | undefined {
    return this.spawned.get(agent);
  }

  has(agent: string): boolean {
    return this.spawned.has(agent);
  }

  all(): IterableIterator<[string, Spawned]> {
    return this.spawned.entries();
  }

  /** The agents `parent` spawned, in order. */
  childrenOf(parent: string): readonly string[] {
    return this.children.get(parent) ?? [];
  }

  /** `agent`, then each agent above it that was spawned. */
  lineOf(agent: string): string[] {
    const line: string[] = [];
    for (let at: string | undefined = agent; at !== undefined && this.spawned.has(at); at = this.spawned.get(at)!.parent) line.push(at);
    return line;
  }

  isBelow(agent: string, ancestor: string): boolean {
    for (let at = this.spawned.get(agent); at; at = this.spawned.get(at.parent)) if (at.parent === ancestor) return true;
    return false;
  }

  /** `agent` and every agent below it, parents before their children. */
  subtree(agent: string): string[] {
    return [agent, ...this.childrenOf(agent).flatMap((child) => this.subtree(child))];
  }
}
