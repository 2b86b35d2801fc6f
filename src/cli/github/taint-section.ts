import type { SessionSummary } from '../../session/summary.js';
import { inline } from '../markdown-tables.js';

/** Where the run's text came from: the event's trust, and the agents that read text from outside the team (docs/security.md: untrusted content). */
export function taintSection(s: Pick<SessionSummary, 'tainted' | 'header'>, heading: string): string[] {
  const tainted = Object.entries(s.tainted);
  const trust = s.header.trust;
  if (tainted.length === 0 && !trust?.untrusted) return [];
  return [
    `${heading} ⚠️ Untrusted content`,
    '',
    ...(trust?.untrusted ? [`The run's inputs, setup steps and workspace are a stranger's by default: ${inline(trust.why)}.`, ''] : []),
    tainted.length
      ? `${tainted.length} agent${tainted.length === 1 ? '' : 's'} read text from outside the team; their writes outside the run needed consent:`
      : 'No agent read text from outside the team.',
    '',
    ...tainted.map(([agent, why]) => `- @${inline(agent)}: ${inline(why)}`),
    '',
  ];
}
