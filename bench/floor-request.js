// The floor of a run's first request: the libraries a run cannot do without before it asks the
// model anything — commander for the command line, yaml for the workflow, @anthropic-ai/sdk
// streaming one message — bundled into one file as conclave is (bench/cold-start.js builds it).
// bench/spawn-fan-out.js times from its start to the request the fake API receives, beside
// conclave's first request (docs/BENCHMARKS.md).
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { Command } from 'commander';
import { parseDocument } from 'yaml';

const program = new Command('floor');
program
  .command('run')
  .argument('<file>')
  .option('--quiet', 'as conclave takes it')
  .action(async (file) => {
    const workflow = parseDocument(readFileSync(file, 'utf8'), { keepSourceTokens: true }).toJS();
    const client = new Anthropic();
    const stream = client.messages.stream({
      model: 'claude-sonnet-5-5',
      max_tokens: 1024,
      system: [{ type: 'text', text: `You are @lead, of ${workflow.name}.` }],
      messages: [{ role: 'user', content: String(workflow.kickoff) }],
    });
    await stream.finalMessage();
  });
await program.parseAsync();
