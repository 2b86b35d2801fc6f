import { defineTool, input } from './define-tool.js';
import { ToolInputError } from './tool.js';

/**
 * Starts agents at run time (docs/workflow.md: templates): one instance of a template per task,
 * each reporting to the caller, all running at once. The caller is woken once, when every one
 * of them has answered. It acts on the run's own state, so a resume runs it again.
 */
export const spawnTool = defineTool({
  name: 'spawn',
  description:
    'Start agents from a template, one per task; they work in parallel and each answers you when done. You are woken once, with every answer, when all have ' +
    'answered. Returns their names (TEMPLATE-N), which you can @mention.',
  readOnly: false,
  external: false,
  input: {
    template: input.string({ description: 'One of the templates you may spawn.' }),
    tasks: input.strings({ minItems: 1, description: 'One task per agent to start: what it must do, in full (it sees nothing else of the run).' }).optional(),
    task: input.string({ description: 'Or one task, for one agent.' }).optional(),
    max_turns: input.integer({ minimum: 1, description: "Turns each may take (default: the run's max_turns_per_agent)." }).optional(),
    budget_usd: input
      .number({ exclusiveMinimum: 0, description: 'Dollars each may spend, with the agents it spawns in turn; carved out of what you have left.' })
      .optional(),
    name: input.string({ description: 'A name for the agent, instead of TEMPLATE-N (one task only): letters, digits, - and _.' }).optional(),
  },
  run: ({ template, task, max_turns, budget_usd, name, ...rest }, { spawn }) => {
    if (!spawn) throw new ToolInputError('this agent cannot spawn');
    const tasks = tasksOf(rest.tasks, task);
    if (max_turns !== undefined && (!Number.isInteger(max_turns) || max_turns < 1))
      throw new ToolInputError('"max_turns" must be a whole number of at least 1');
    if (name !== undefined && tasks.length !== 1) throw new ToolInputError('"name" names one agent: give one task with it');
    const names = spawn(template, tasks, { maxTurns: max_turns, budgetUsd: budget_usd, name });
    return { content: `Started ${names.map((n) => `@${n}`).join(', ')}. Each has its task; you will be woken when all have answered.` };
  },
});

export const cancelTool = defineTool({
  name: 'cancel',
  description:
    'Cancel an agent you spawned (or one spawned below it) and every agent below it, deepest first: their work in flight stops and they take no more turns. ' +
    'Its answer no longer comes.',
  readOnly: false,
  external: false,
  input: {
    agent: input.string({ description: 'The agent to cancel, as TEMPLATE-N (with or without @).' }),
  },
  run: ({ agent }, { cancel }) => {
    if (!cancel) throw new ToolInputError('this agent cannot cancel agents');
    return { content: cancel(agent.replace(/^@/, '')) };
  },
});

export const forkTool = defineTool({
  name: 'fork',
  description:
    'Fork yourself, once per task: each fork starts as you are now, with this whole conversation, and does its one task in parallel; each answers you when ' +
    'done. You are woken once, with every answer, when all have answered. Returns their names.',
  readOnly: false,
  external: false,
  input: {
    tasks: input.strings({ minItems: 1, description: 'One task per fork: what that fork must do.' }).optional(),
    task: input.string({ description: 'Or one task, for one fork.' }).optional(),
  },
  run: ({ tasks, task }, { fork, forkPoint }) => {
    if (!fork || !forkPoint) throw new ToolInputError('this agent cannot fork');
    const names = fork(tasksOf(tasks, task), forkPoint);
    return { content: `Forked ${names.map((n) => `@${n}`).join(', ')}. Each has its task; you will be woken when all have answered.` };
  },
});

/** `tasks`, or `task` as a list of one: exactly one of them. */
function tasksOf(tasks: string[] | undefined, task: string | undefined): string[] {
  if ((tasks === undefined) === (task === undefined)) throw new ToolInputError('give "tasks" (a list) or "task" (one), not both and not neither');
  return tasks ?? [task!];
}
