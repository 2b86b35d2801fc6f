/** An agent as its teammates' prompts and the roster tool describe it. */
export interface TeamEntry {
  name: string;
  role: 'manager' | 'worker';
  isLead: boolean;
  reportsTo: string | null;
  description: string;
}

/** One agent's line of a roster: its name, its role and whom it reports to, and what it does. */
export function rosterLine(m: TeamEntry, you?: string): string {
  const role = m.isLead ? 'manager, the lead' : `${m.role}, reports to @${m.reportsTo}`;
  return `- @${m.name}${m.name === you ? ' (you)' : ''} — ${role}${m.description ? `: ${m.description}` : ''}`;
}
