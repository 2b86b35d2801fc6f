/** The tools conclave gives a team beside the workspace's: proposals, the channel, spawning, documents, the roster, the lead's end. */
export const TEAM_TOOLS = [
  'propose',
  'vote',
  'cancel_proposal',
  'channel_history',
  'complete',
  'spawn',
  'fork',
  'cancel',
  'team_roster',
  'read_document',
  'edit_document',
  'append_document',
  'review_edit',
] as const;
