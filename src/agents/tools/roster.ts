import { rosterLine, type TeamEntry } from '../team-entry.js';
import { defineTool, input } from './define-tool.js';
import type { AgentTool } from './tool.js';

/** How many members the roster tool lists per call. */
const PAGE = 100;

/**
 * The whole team, one call away, for agents of a large team whose system prompt lists only their
 * neighbourhood (docs/design.md: context): so that a prompt grows with what the agent received, not with the team.
 */
export function rosterTool(team: readonly TeamEntry[]): AgentTool {
  return defineTool({
    name: 'team_roster',
    description: `List the members of the team (${team.length} agents), ${PAGE} at a time: name, role, whom each reports to and what each does.`,
    readOnly: true,
    external: false,
    input: {
      reports_to: input.string({ description: 'Only the agents who report to this one.' }).optional(),
      page: input.integer({ minimum: 1, description: `Which ${PAGE} (default 1).` }).optional(),
    },
    run: ({ reports_to, page = 1 }) => {
      const manager = reports_to?.replace(/^@/, '');
      const chosen = manager === undefined ? team : team.filter((m) => m.reportsTo === manager);
      const shown = chosen.slice((page - 1) * PAGE, page * PAGE);
      if (shown.length === 0)
        return { content: chosen.length === 0 ? 'No agent matches.' : `There are ${chosen.length} matching agents: page ${page} is past the end.` };
      const more = chosen.length > page * PAGE ? `\n(${chosen.length - page * PAGE} more: ask for page ${page + 1}.)` : '';
      return { content: shown.map((m) => rosterLine(m)).join('\n') + more };
    },
  });
}
