// The floor of a run's first request: the libraries a run cannot do without before it asks the
// model anything — commander for the command line, yaml for the workflow, @anthropic-ai/sdk
// streaming one message — bundled into one file as conclave is (bench/cold-start.js builds it).
// bench/spawn-fan-out.js times from its start to the request the fake API receives, beside
// conclave's first request (docs/BENCHMARKS.md).
import { floorRun } from './floor-run.js';

await floorRun(async (workflow, client) => {
  const stream = client.messages.stream({
    model: 'claude-sonnet-5-5',
    max_tokens: 1024,
    system: [{ type: 'text', text: `You are @lead, of ${workflow.name}.` }],
    messages: [{ role: 'user', content: String(workflow.kickoff) }],
  });
  await stream.finalMessage();
});
