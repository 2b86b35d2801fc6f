import type { Limits } from '../workflow/limits.js';
import { type Ending, limitEnding } from './ending.js';
import type { Spawner } from './teams/spawner.js';

/**
 * Turns taken, per agent and by the team, against `max_turns`, `max_turns_per_agent` and a
 * spawned agent's own `max_turns` (docs/workflow.md: limits).
 */
export class TurnCounts {
  private readonly turns = new Map<string, number>();
  /** Turns the team has begun. */
  team = 0;

  constructor(
    private readonly limits: () => Limits,
    private readonly spawner: () => Spawner | undefined,
  ) {}

  add(agent: string): void {
    this.turns.set(agent, 0);
  }

  of(agent: string): number {
    return this.turns.get(agent)!;
  }

  begin(agent: string, turn: number): void {
    this.team++;
    this.turns.set(agent, turn);
  }

  /** The team used `max_turns`. */
  get teamCapped(): boolean {
    return this.team >= this.limits().maxTurns;
  }

  hasTurnsLeft(agent: string): boolean {
    return this.of(agent) < this.limitOf(agent) && !this.spawner()?.isEnded(agent);
  }

  /** Whether `agent` may take a turn now: turns of its own left, and the team's. */
  canTakeTurn(agent: string): boolean {
    return this.hasTurnsLeft(agent) && !this.teamCapped;
  }

  /**
   * Agents with messages left that none may handle, as nothing runs: the team's limit ends the
   * run; a spawned agent out of its turns ends (its spawner is told) and the run goes on
   * (`undefined`); declared ones out of their turns end the run.
   */
  outOfTurns(wanting: readonly string[]): Ending | undefined {
    const { maxTurns, maxTurnsPerAgent } = this.limits();
    if (this.teamCapped) return limitEnding('max_turns', `(${maxTurns} turns for the team)`);
    const spawner = this.spawner()!;
    const ended = wanting.filter((n) =>
      spawner.end(
        n,
        'limit',
        `stopped: it reached ${spawner.maxTurnsOf(n) ? 'its max_turns' : 'max_turns_per_agent'} (${this.limitOf(n)}) with messages it did not handle`,
      ),
    );
    if (ended.length > 0) return undefined;
    const capped = wanting.map((n) => `@${n}`).join(', ');
    return limitEnding('max_turns_per_agent', `(${maxTurnsPerAgent}) for ${capped}, who still ${wanting.length === 1 ? 'has' : 'have'} messages to handle`);
  }

  private limitOf(agent: string): number {
    return Math.min(this.limits().maxTurnsPerAgent, this.spawner()?.maxTurnsOf(agent) ?? Infinity);
  }
}
