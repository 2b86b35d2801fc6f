import type { WorkspaceTool } from '../../workflow/types.js';
import { annotate } from './annotate.js';
import { grep } from './grep.js';
import { runCommand } from './run-command.js';
import type { AgentTool } from './tool.js';
import { listFiles, readFile, writeFile } from './workspace.js';

/** The tools that act on the workspace, by the names a workflow's `tools:` gives them. */
export const WORKSPACE_TOOL_BY_NAME: Record<WorkspaceTool, AgentTool> = {
  read_file: readFile,
  write_file: writeFile,
  list_files: listFiles,
  grep,
  run_command: runCommand,
  annotate,
};
