import type { AgentProfile } from '../agents/profile.js';
import { systemPrompt, type TeamEntry } from '../agents/preamble.js';
import { cancelProposal, channelHistory, complete, propose, vote } from '../agents/tools/coordination.js';
import type { AgentTool } from '../agents/tools/tool.js';
import { grep, listFiles, readFile, runCommand, writeFile } from '../agents/tools/workspace.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate } from '../workflow/fill.js';
import { DEFAULT_MAX_TOKENS, DEFAULT_MODEL } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { WorkspaceTool } from '../workflow/types.js';

const WORKSPACE_TOOLS: Record<WorkspaceTool, AgentTool> = {
  read_file: readFile,
  write_file: writeFile,
  list_files: listFiles,
  grep,
  run_command: runCommand,
};

/** Every agent's profile, in file order, with its prompts interpolated from `scope`. */
export function buildProfiles(workflow: Workflow, scope: Scope, modelOverride?: string): AgentProfile[] {
  const { spec, graph } = workflow;
  const team: TeamEntry[] = [...graph.members.values()].map((m) => {
    const description = workflow.templates.get(`agents.${m.name}.description`);
    return {
      name: m.name,
      role: m.role,
      isLead: m.name === graph.lead,
      reportsTo: m.reportsTo,
      description: description ? fillTemplate(description, scope) : '',
    };
  });
  return team.map((entry) => {
    const agent = spec.agents[entry.name]!;
    const system = workflow.system[entry.name];
    const tools = [propose, vote, cancelProposal, channelHistory, ...(entry.isLead ? [complete] : []), ...(agent.tools ?? []).map((t) => WORKSPACE_TOOLS[t])];
    return {
      ...entry,
      model: modelOverride ?? agent.model ?? spec.defaults?.model ?? DEFAULT_MODEL,
      maxTokens: agent.max_tokens ?? spec.defaults?.max_tokens ?? DEFAULT_MAX_TOKENS,
      wake: agent.wake ?? (entry.role === 'manager' ? 'all' : 'each'),
      tools,
      system: systemPrompt({
        workflow: spec,
        agent: entry,
        team,
        toolNames: tools.map((t) => t.definition.name),
        instructions: system ? fillTemplate(system, scope) : '',
      }),
    };
  });
}
