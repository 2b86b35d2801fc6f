import type { AgentProfile } from '../../agents/profile.js';
import type { RefusalDetails } from '../../provider/api-controls.js';
import type { TurnNotice } from '../../agents/turn.js';
import type { Channel } from '../../channel/channel.js';
import { ending, type Ending } from '../ending.js';
import type { ProgressEvent } from '../progress-events.js';

/**
 * A refusal (docs/design.md: models) ends the agent's turn with nothing posted. Its manager is told, so that
 * the work can go elsewhere; a lead's refusal ends the run with failure (the ending returned).
 */
export function afterRefusal(profile: AgentProfile, turn: number, channel: Channel, details: RefusalDetails): Ending | undefined {
  const category = details.category ? `, category ${details.category}` : '';
  const what = `@${profile.name}'s model ${profile.model} declined to answer (stop reason refusal${category}) in its turn ${turn}`;
  if (profile.isLead || !profile.reportsTo) return ending('failure', `${what}, so the run cannot go on${fallbackAdvice(profile, details)}`);
  channel.postSystem(`${what}: it posted nothing. Rephrase the request, or give the work to another agent.`, [profile.reportsTo]);
  return undefined;
}

/** What the user may do: name the model the API recommends as a fallback (docs/api-controls.md). */
function fallbackAdvice(profile: AgentProfile, details: RefusalDetails): string {
  if (profile.fallbacks !== undefined) return `; its fallbacks (${profile.fallbacks === 'default' ? 'default' : profile.fallbacks.join(', ')}) declined too`;
  if (profile.provider !== 'anthropic') return '';
  if (!details.recommended) return "; name another model in the agent's fallbacks: to have the API answer with it";
  return `; the API recommends ${details.recommended}: name it in the agent's fallbacks: to have the API answer with it`;
}

/** What a turn's notice shows in the live view and the log. */
export function noticeEvent(agent: string, n: TurnNotice): ProgressEvent {
  if (n.kind === 'refused') return { type: 'stop_reason', agent, reason: 'refusal' };
  if (n.kind === 'cut_tool') return { type: 'stop_reason', agent, reason: 'max_tokens', tool: n.tool };
  return { type: 'stop_reason', agent, reason: n.reason };
}
