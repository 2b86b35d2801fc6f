// The floor of the wide spawn (bench/spawn-fan-out.js): a bare client making the same calls
// through the same fake API — commander for the command line, yaml for the workflow, and
// @anthropic-ai/sdk streaming each message — bundled into one file as conclave is. The lead is
// asked, its spawn tool call names the tasks, each task is one agent's call, all at once beside the
// lead's reply to its tool call, then the lead is asked once more with every answer. No channel,
// session, budget or pacing: what conclave adds to a wide spawn is its wall time over this one's.
import { floorRun } from './floor-run.js';

const MODEL = 'claude-sonnet-5-5';
const SPAWN = { name: 'spawn', description: 'Spawns one agent per task.', input_schema: { type: 'object', properties: { tasks: { type: 'array' } } } };

await floorRun(async (workflow, client) => {
  const ask = (agent, messages, tools = []) =>
    client.messages
      .stream({ model: MODEL, max_tokens: 1024, system: [{ type: 'text', text: `You are @${agent}, of ${workflow.name}.` }], messages, tools })
      .finalMessage();
  const kickoff = [{ role: 'user', content: String(workflow.kickoff) }];
  const spawned = await ask('lead', kickoff, [SPAWN]);
  const call = spawned.content.find((block) => block.type === 'tool_use');
  const tasks = call.input.tasks;
  const names = tasks.map((_, n) => `checker-${n + 1}`);
  const told = [...kickoff, { role: 'assistant', content: spawned.content }];
  const result = {
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: call.id, content: `Started ${names.map((name) => `@${name}`).join(', ')}.` }],
  };
  const [, ...answers] = await Promise.all([
    ask('lead', [...told, result], [SPAWN]),
    ...tasks.map((task, n) => ask(names[n], [{ role: 'user', content: String(task) }])),
  ]);
  const findings = answers.map((answer, n) => `@${names[n]}: ${answer.content.map((block) => block.text ?? '').join('')}`).join('\n');
  await ask('lead', [...told, result, { role: 'assistant', content: 'Spawned.' }, { role: 'user', content: findings }], [SPAWN]);
});
