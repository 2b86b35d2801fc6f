import { describe, expect, it } from 'vitest';
import { sentTools } from '../../src/agents/profile.js';
import { request } from '../../src/agents/request.js';
import { expandTeam } from '../../src/engine/teams/for-each.js';
import { buildProfiles, instanceProfile, type ProfileSources } from '../../src/engine/teams/profiles.js';
import { withTeamTools } from '../../src/engine/teams/team-tools.js';
import { FULL_ROSTER_UP_TO } from '../../src/agents/preamble.js';
import { TrustPolicy } from '../../src/engine/trust/trust.js';
import { workflowOf } from '../helpers/workflow-of.js';

const TEAM = (extra = '') => `
name: team
context: The change under review.
agents:
  lead: { role: manager, spawns: [helper] }
  reviewer: { role: worker, for_each: [1, 2], tools: [grep] }
  plain: { role: worker }
templates:
  helper: { role: worker, fork: true }
${extra}
kickoff: Review.
`;

async function profilesOf(text: string, share: boolean, context: string | null = 'The change under review.') {
  const workflow = await workflowOf(text);
  const expanded = expandTeam(workflow, {});
  const sources = withTeamTools<ProfileSources>({ workflow, scope: {}, ...(context ? { context } : {}) }, expanded, share);
  const profiles = buildProfiles(sources, expanded);
  return { sources, profiles, byName: new Map(profiles.map((p) => [p.name, p])) };
}
const names = (tools: readonly { definition: { name: string } }[]) => tools.map((t) => t.definition.name);

describe("the team's coordination tools, one list for every agent of a context", () => {
  it('holds every coordination tool any agent or template has, in one order, then each agent its own workspace tools', async () => {
    const { sources, byName } = await profilesOf(TEAM(), true);
    const team = ['propose', 'vote', 'cancel_proposal', 'channel_history', 'spawn', 'fork', 'cancel', 'complete'];
    expect(names(sources.teamTools!)).toEqual(team);
    expect(names(sentTools(byName.get('lead')!))).toEqual(team);
    expect(names(sentTools(byName.get('plain')!))).toEqual(team);
    expect(names(sentTools(byName.get('reviewer-1')!))).toEqual([...team, 'grep']);
    // What each may call is its own.
    expect(names(byName.get('lead')!.tools)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history', 'spawn', 'cancel', 'complete']);
    expect(names(byName.get('plain')!.tools)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history']);
    expect(names(byName.get('reviewer-2')!.tools)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history', 'grep']);
  });

  it('sends one array for the agents with the same own tools, a spawned agent included, and another for other own tools', async () => {
    const { sources, byName } = await profilesOf(TEAM(), true);
    const sent = (name: string) => request(byName.get(name)!, [{ role: 'user', content: [{ type: 'text', text: 'x' }] }]).tools;
    expect(sent('plain')).toBe(sent('lead'));
    expect(sent('reviewer-2')).toBe(sent('reviewer-1'));
    expect(sent('reviewer-1')).not.toBe(sent('lead'));
    const helper = instanceProfile(sources, 'helper', 'helper-1', 'lead');
    expect(names(helper.tools)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history', 'fork', 'cancel']);
    expect(request(helper, [{ role: 'user', content: [{ type: 'text', text: 'x' }] }]).tools).toBe(sent('lead'));
  });

  it('is not made without a context, or for a run recorded without it: each agent is sent its own tools', async () => {
    for (const { share, context } of [
      { share: false, context: 'The change under review.' },
      { share: true, context: null },
    ]) {
      const { sources, byName } = await profilesOf(TEAM(), share, context);
      expect(sources.teamTools).toBeUndefined();
      expect(byName.get('plain')!.offered).toBeUndefined();
      expect(names(sentTools(byName.get('plain')!))).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history']);
    }
  });

  it('keeps the documents and the consent form of propose where the run has them', async () => {
    const workflow = await workflowOf(TEAM('documents:\n  plan: { owner: lead }\n'));
    const expanded = expandTeam(workflow, {});
    const trust = new TrustPolicy(workflow.spec, { untrusted: true, why: 'a fork' });
    expect(trust.active).toBe(true);
    const sources = withTeamTools<ProfileSources>({ workflow, scope: {}, context: 'x', trust }, expanded, true);
    const propose = sources.teamTools!.find((t) => t.definition.name === 'propose')!;
    expect(Object.keys(propose.definition.input_schema.properties as object)).toContain('action');
    expect(names(sources.teamTools!)).toEqual(expect.arrayContaining(['read_document', 'edit_document', 'review_edit', 'append_document']));
  });

  it('holds spawn, fork and cancel only where some agent or template has them', async () => {
    const plain = `
name: plain
context: x
agents:
  lead: { role: manager }
  helper: { role: worker }
templates:
  other: { role: worker }
kickoff: Go.
`;
    expect(names((await profilesOf(plain, true)).sources.teamTools!)).toEqual(['propose', 'vote', 'cancel_proposal', 'channel_history', 'complete']);
    const forks = plain.replace('other: { role: worker }', 'other: { role: worker, fork: true }');
    expect(names((await profilesOf(forks, true)).sources.teamTools!)).toEqual([
      'propose',
      'vote',
      'cancel_proposal',
      'channel_history',
      'fork',
      'cancel',
      'complete',
    ]);
  });

  it("holds a large team's roster, sent as each agent's own says it, and none at the size whose prompts list everyone", async () => {
    const team = (workers: number) => `
name: large
context: x
agents:
  lead: { role: manager }
  worker: { role: worker, for_each: [${Array.from({ length: workers }, (_, i) => i + 1).join(', ')}] }
kickoff: Go.
`;
    expect(names((await profilesOf(team(FULL_ROSTER_UP_TO - 1), true)).sources.teamTools!)).not.toContain('team_roster');
    const { sources, byName } = await profilesOf(team(FULL_ROSTER_UP_TO), true);
    const shared = sources.teamTools!.find((t) => t.definition.name === 'team_roster')!;
    const own = byName.get('worker-1')!.tools.find((t) => t.definition.name === 'team_roster')!;
    expect(shared.definition).toEqual(own.definition);
    expect(shared.definition.description).toContain(`(${FULL_ROSTER_UP_TO + 1} agents)`);
  });
});
