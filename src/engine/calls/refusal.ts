import type { AgentProfile } from '../../agents/profile.js';
import type { TurnNotice } from '../../agents/turn.js';
import type { Channel } from '../../channel/channel.js';
import { ending, type Ending } from '../ending.js';
import type { ProgressEvent } from '../progress-events.js';

/**
 * A refusal (docs/design.md: models) ends the agent's turn with nothing posted. Its manager is told, so that
 * the work can go elsewhere; a lead's refusal ends the run with failure (the ending returned).
 */
export function afterRefusal(profile: AgentProfile, turn: number, channel: Channel): Ending | undefined {
  const what = `@${profile.name}'s model declined to answer (stop reason refusal) in its turn ${turn}`;
  if (profile.isLead || !profile.reportsTo) return ending('failure', `${what}, so the run cannot go on`);
  channel.postSystem(`${what}: it posted nothing. Rephrase the request, or give the work to another agent.`, [profile.reportsTo]);
  return undefined;
}

/** What a turn's notice shows in the live view and the log. */
export function noticeEvent(agent: string, n: TurnNotice): ProgressEvent {
  if (n.kind === 'refused') return { type: 'stop_reason', agent, reason: 'refusal' };
  if (n.kind === 'cut_tool') return { type: 'stop_reason', agent, reason: 'max_tokens', tool: n.tool };
  return { type: 'stop_reason', agent, reason: n.reason };
}
