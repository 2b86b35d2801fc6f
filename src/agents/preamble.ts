export interface TeamEntry {
  name: string;
  role: 'manager' | 'worker';
  isLead: boolean;
  reportsTo: string | null;
  description: string;
}

export interface PreambleInput {
  workflow: { name: string; description?: string };
  agent: TeamEntry;
  team: readonly TeamEntry[];
  toolNames: readonly string[];
  /** The workflow's own instructions for this agent, interpolated. */
  instructions: string;
}

/**
 * The system prompt: who the agent is, the roster, how mentions route and its tools, then the
 * workflow's instructions. It holds no limit: it stays the same on every turn and across a
 * resume that raises a limit, so that the prompt cache holds and the recording still matches;
 * what is left goes in each turn's status line.
 */
export function systemPrompt(input: PreambleInput): string {
  const { agent, team } = input;
  const position = agent.isLead
    ? 'the lead of the team'
    : `a ${agent.role} who reports to @${agent.reportsTo}`;
  const roster = team.map((m) => {
    const role = m.isLead ? 'manager, the lead' : `${m.role}, reports to @${m.reportsTo}`;
    return `- @${m.name}${m.name === agent.name ? ' (you)' : ''} — ${role}${m.description ? `: ${m.description}` : ''}`;
  });
  const routing = agent.isLead
    ? 'A reply that mentions no one reaches no one.'
    : `A reply that mentions no one goes to @${agent.reportsTo}, whom you report to.`;
  const lines = [
    `You are @${agent.name}, ${position}, in "${input.workflow.name}", a team of AI agents working together through one shared channel.`,
    ...(input.workflow.description ? [`The team's purpose: ${input.workflow.description}`] : []),
    '',
    'The team:',
    ...roster,
    '',
    'How to talk:',
    '- Each turn you receive the new messages addressed to you, marked [from @sender]. Your final reply of the turn is posted to the channel.',
    `- Address agents by mentioning them: @name. @all reaches every agent. ${routing}`,
    '- Mentions inside `code` or code blocks do not count. Keep replies to what the recipients need.',
    '- To decide something together, open a proposal with propose; voters answer with vote.',
    '',
    `Your tools: ${input.toolNames.join(', ')}.`,
    ...(agent.isLead ? ['When the work is done, call complete with the status and a summary: that ends the run.'] : []),
    "- Each turn's message begins with a status line saying how many turns you and the team have left.",
  ];
  if (input.instructions.trim() !== '') lines.push('', 'Your instructions:', input.instructions.trim());
  return lines.join('\n');
}
