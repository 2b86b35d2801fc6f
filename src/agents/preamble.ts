import { rosterLine, type TeamEntry } from './team-entry.js';

/** A team larger than this lists only each agent's neighbourhood in its system prompt. */
export const FULL_ROSTER_UP_TO = 16;

/** In a large team, an agent's peers are listed by name up to this many. */
const PEERS_LISTED = 8;

export type { TeamEntry } from './team-entry.js';

export interface PreambleInput {
  workflow: { name: string; description?: string };
  agent: TeamEntry;
  team: readonly TeamEntry[];
  toolNames: readonly string[];
  /** The workflow's own instructions for this agent, interpolated. */
  instructions: string;
  /** The workflow's documents with an owner (docs/workflow.md: documents). */
  documents?: readonly { name: string; owner: string; mode: 'edit' | 'append' }[];
  /** In a run with text from outside the team: how to read it (docs/security.md: untrusted content). */
  untrustedNote?: string;
  /** The workflow's people, and the proposals only they decide (docs/workflow.md: votes from people). */
  people?: { voters: readonly string[]; decide: readonly string[] };
}

/**
 * The system prompt's blocks. Without a context: one block, conclave's preamble (who the agent
 * is, the roster, how mentions route, its tools) then the workflow's instructions. With the
 * workflow's `context:`, what the team shares comes first and the agent's own part last, so
 * that every agent's prompt begins with the same bytes and the prompt cache serves them all
 * (docs/workflow.md: sharing the prompt cache): the context, the instructions (the same for the
 * instances of a template), then the preamble. None holds a limit: the prompt stays the same on
 * every turn and across a resume that raises a limit, so that the cache holds and the recording
 * still matches; what is left goes in each turn's status line.
 */
export function systemPrompt(input: PreambleInput, context?: string): string[] {
  const instructions = input.instructions.trim() === '' ? [] : [`Your instructions:\n${input.instructions.trim()}`];
  if (context === undefined) return [[preamble(input), ...instructions].join('\n\n')];
  return [context, ...instructions, preamble(input)];
}

function preamble(input: PreambleInput): string {
  const { agent, team } = input;
  const position = agent.isLead ? 'the lead of the team' : `a ${agent.role} who reports to @${agent.reportsTo}`;
  const roster = team.length <= FULL_ROSTER_UP_TO ? team.map((m) => rosterLine(m, agent.name)) : neighbourhood(agent, team);
  const routing = agent.isLead
    ? 'A reply that mentions no one reaches no one.'
    : `A reply that mentions no one goes to @${agent.reportsTo}, whom you report to.`;
  const lines = [
    `You are @${agent.name}, ${position}, in "${input.workflow.name}", a team of AI agents working together through one shared channel.`,
    ...(input.workflow.description ? [`The team's purpose: ${input.workflow.description}`] : []),
    '',
    team.length <= FULL_ROSTER_UP_TO ? 'The team:' : `The team has ${team.length} agents; those you work with most (team_roster lists them all):`,
    ...roster,
    '',
    'How to talk:',
    '- Each turn you receive the new messages addressed to you, marked [from @sender]. Your final reply of the turn is posted to the channel.',
    `- Address agents by mentioning them: @name. @all reaches every agent. ${routing}`,
    '- Mentions inside `code` or code blocks do not count. Keep replies to what the recipients need.',
    '- To decide something together, open a proposal with propose; voters answer with vote.',
    ...peopleLines(input),
    ...documentLines(input),
    '',
    `Your tools: ${input.toolNames.join(', ')}.`,
    ...(agent.isLead ? ['When the work is done, call complete with the status and a summary: that ends the run.'] : []),
    "- Each turn's message begins with a status line saying how many turns you and the team have left.",
    ...(input.untrustedNote ? [`- ${input.untrustedNote}`] : []),
  ];
  return lines.join('\n');
}

/** Who the people are, and the decisions that are theirs: a proposal of such an id is decided by them, whoever an agent names. */
function peopleLines({ people }: PreambleInput): string[] {
  if (!people) return [];
  const ids = people.decide.map((id) => `"${id}"`).join(', ');
  return [
    `- People vote too, from GitHub, not in this channel: ${people.voters.join(', ')}. Name them as voters of a proposal as written here; a mention ` +
      'of them in a message reaches no one.',
    ...(people.decide.length
      ? [
          `- Decisions that are the people's: the proposals with the id ${ids}. Open one with propose and that id when the decision is due: ` +
            "whatever voters you name, the people decide it; agents' votes on it are advice. The run cannot end in success while one is open.",
        ]
      : []),
  ];
}

/** The team's documents, and what the agent does with those it owns. */
function documentLines({ agent, documents = [] }: PreambleInput): string[] {
  if (documents.length === 0) return [];
  const listed = documents.map((d) => `"${d.name}" (${d.mode === 'append' ? 'append entries with append_document; ' : ''}owner @${d.owner})`);
  const owned = documents.filter((d) => d.owner === agent.name && d.mode === 'edit').map((d) => `"${d.name}"`);
  return [
    `- Team documents: ${listed.join(', ')}. Read them with read_document; change them with edit_document, which waits for the owner's review ` +
      'unless you are the owner.',
    ...(owned.length ? [`- You own ${owned.join(', ')}: other agents' edits come to you as NAME#N, with a diff; answer each with review_edit.`] : []),
  ];
}

/** The agent, its manager, its reports and its peers (named while they are few): what a large team's member needs first. */
function neighbourhood(agent: TeamEntry, team: readonly TeamEntry[]): string[] {
  const manager = team.find((m) => m.name === agent.reportsTo);
  const reports = team.filter((m) => m.reportsTo === agent.name);
  const peers = team.filter((m) => m.reportsTo === agent.reportsTo && m.name !== agent.name && agent.reportsTo !== null);
  const lines = [rosterLine(agent, agent.name), ...(manager ? [rosterLine(manager)] : []), ...reports.map((m) => rosterLine(m))];
  if (peers.length <= PEERS_LISTED) lines.push(...peers.map((m) => rosterLine(m)));
  else lines.push(`- and ${peers.length} others who report to @${agent.reportsTo}, as you do (team_roster with reports_to: "${agent.reportsTo}" lists them)`);
  return lines;
}
