import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTestFile } from '../../src/cli/test/test-file.js';
import { expectedNameProblems } from '../../src/cli/test/test-names.js';
import { loadWorkflow } from '../../src/workflow/load.js';

/** The agents and tools a test file's expectations name, checked against its workflow (src/cli/test/test-names.ts, issue 81). */
async function problems(workflow: string, expect_: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-names-'));
  writeFileSync(join(dir, 'w.yml'), workflow);
  writeFileSync(join(dir, 'w.test.yml'), `workflow: w.yml\ncases:\n  - name: a\n    session: a.session.jsonl\n    expect:\n${expect_}`);
  const { workflow: loaded } = await loadWorkflow(join(dir, 'w.yml'));
  const { test } = loadTestFile(join(dir, 'w.test.yml'), dir);
  const found = expectedNameProblems(test!, loaded!);
  for (const d of found) expect(d.severity).toBe('error');
  return found.map((d) => `${d.line}:${d.col} ${d.message}`);
}

const TEAM = 'name: team\nagents:\n  lead: { role: manager }\n  security: { role: worker, tools: [grep] }\nkickoff: Go.\n';

describe("the names a test file's expectations give", () => {
  it('an agent or a tool the workflow cannot have, at its place, with a did-you-mean', async () => {
    expect(
      await problems(
        TEAM,
        '      tools: [{ agent: securty, name: grepp }, { name: grep }]\n      not_tools: [{ agent: lead, name: write_fle }]\n' +
          '      messages: [{ from: lead, to: tonne }, { from: secruity }]\n',
      ),
    ).toEqual([
      '6:15 the call expected of @securty is not an agent of team (did you mean "security"?); its agents are @lead, @security',
      '6:15 no agent of team can call "grepp" (did you mean "grep"?)',
      '7:19 no agent of team can call "write_fle" (did you mean "write_file"?)',
      '8:18 the message expected to @tonne is not an agent of team; its agents are @lead, @security',
      '8:45 the message expected from @secruity is not an agent of team (did you mean "security"?); its agents are @lead, @security',
    ]);
  });

  it('votes and not_messages name agents too; a voter written with @ that is no agent is a person, not judged', async () => {
    expect(
      await problems(
        TEAM,
        '      votes: { securty: approve, security: approve, "@security": approve, "@octocat": approve }\n' +
          '      not_messages: [{ from: leed }, { to: lead }]\n',
      ),
    ).toEqual([
      '6:16 the vote expected of @securty is not an agent of team (did you mean "security"?); its agents are @lead, @security',
      '7:22 the message ruled out from @leed is not an agent of team (did you mean "lead"?); its agents are @lead, @security',
    ]);
  });

  it("names the workflow has, the team's own tools, and instances of for_each and forks hold", async () => {
    const made = `${TEAM.replace('kickoff', '  rev: { role: worker, for_each: [a, b] }\n  lead2: { role: manager, reports_to: lead, fork: true }\nkickoff')}`;
    expect(
      await problems(
        made,
        '      tools: [{ agent: lead, name: complete }, { agent: rev-2, name: propose }, { agent: lead2-fork-1, name: vote }, { name: team_roster }]\n' +
          '      messages: [{ from: security, to: lead }]\n',
      ),
    ).toEqual([]);
  });

  it('with templates any agent name may be spawned, and with MCP servers any tool may exist: neither is judged', async () => {
    const spawning = TEAM.replace('kickoff', 'templates:\n  helper: { role: worker }\nkickoff').replace(
      'lead: { role: manager }',
      'lead: { role: manager, spawns: [helper] }',
    );
    expect(await problems(spawning, '      tools: [{ agent: anyone, name: grep }]\n')).toEqual([]);
    // Without for_each or fork an agent has no instances: security-1 is no agent.
    expect(await problems(TEAM, '      tools: [{ agent: security-1, name: grep }]\n')).toHaveLength(1);
    const mcp = TEAM.replace('kickoff', 'mcp_servers:\n  docs: { command: node, args: [x.js] }\nkickoff').replace('tools: [grep]', 'tools: [grep, docs]');
    expect(await problems(mcp, '      tools: [{ agent: security, name: docs__search }]\n')).toEqual([]);
    expect(await problems(mcp, '      tools: [{ agent: nobody, name: docs__search }]\n')).toHaveLength(1);
  });
});
