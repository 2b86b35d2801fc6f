import type { Diagnostic } from '../../workflow/diagnostic.js';
import type { Workflow } from '../../workflow/load.js';
import { didYouMean } from '../../workflow/suggest.js';
import { WORKSPACE_TOOLS } from '../../workflow/types.js';
import type { TestFile, ToolMatch } from './expectations.js';
import { TEAM_TOOLS } from '../../session/team-tools.js';
import { GRADER_IDS } from '../../session/graders/grader-ids.js';

/**
 * The agents and tools a test file's expectations name that its workflow cannot have, each at its
 * place with a did-you-mean (docs/testing-workflows.md): checked as strictly as a workflow, so
 * that `@tonne` or `grepp` fails `validate`, not the run. An agent a model may name at run time
 * (a workflow with templates: `spawn` takes any name) and the tools of MCP servers (known when
 * they start) are not judged.
 */
export function expectedNameProblems(test: TestFile, workflow: Workflow): Diagnostic[] {
  const { spec } = workflow;
  const agents = Object.keys(spec.agents);
  const spawning = Object.keys(spec.templates ?? {}).length > 0;
  const made = Object.entries(spec.agents).filter(([, a]) => a.for_each !== undefined || a.fork === true);
  const instance = (name: string) => made.some(([base]) => new RegExp(`^${base}(-fork)?-[0-9]+$`).test(name));
  const tools: string[] = [...WORKSPACE_TOOLS, ...TEAM_TOOLS];
  const mcp = Object.keys(spec.mcp_servers ?? {}).length > 0;
  const graders = [...GRADER_IDS, ...Object.keys(spec.graders ?? {})];
  const out: Diagnostic[] = [];
  const at = (where: { line: number; col: number }, message: string) =>
    out.push({ file: test.file, line: where.line, col: where.col, severity: 'error', message });
  const agent = (name: string | undefined, where: { line: number; col: number }, role: string) => {
    if (name === undefined || spawning || agents.includes(name) || instance(name)) return;
    at(where, `${role} @${name} is not an agent of ${spec.name}${didYouMean(name, agents)}; its agents are ${agents.map((a) => `@${a}`).join(', ')}`);
  };
  const tool = (call: ToolMatch) => {
    agent(call.agent, call.at, 'the call expected of');
    if (tools.includes(call.name) || mcp) return;
    at(call.at, `no agent of ${spec.name} can call "${call.name}"${didYouMean(call.name, tools)}`);
  };
  for (const testCase of test.cases)
    for (const e of testCase.expect) {
      if (e.kind === 'tools') e.calls.forEach(tool);
      if (e.kind === 'not_tool') tool(e.call);
      if (e.kind === 'message' || e.kind === 'not_message') {
        const expected = e.kind === 'message' ? 'expected' : 'ruled out';
        agent(e.message.from, e.message.at, `the message ${expected} from`);
        agent(e.message.to, e.message.at, `the message ${expected} to`);
      }
      // A voter written with @ that is no agent is a person's seat (@login, @org/team): the people's, not judged here.
      if (e.kind === 'grader' && !graders.includes(e.id))
        at(e.at, `unknown grader "${e.id}"${didYouMean(e.id, graders)}; the graders are conclave's (docs/graders.md) and the workflow's graders:`);
      if (e.kind === 'vote' && !(e.voter.startsWith('@') && !agents.includes(e.voter.slice(1)))) agent(e.voter.replace(/^@/, ''), e.at, 'the vote expected of');
    }
  return out.sort((a, b) => a.line - b.line || a.col - b.col);
}
