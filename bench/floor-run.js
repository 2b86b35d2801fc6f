// The command line the floors share (bench/floor-request.js, bench/floor-wide.js): `run <file>
// --quiet` as conclave takes it, the workflow read with yaml, and an Anthropic client.
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { Command } from 'commander';
import { parseDocument } from 'yaml';

/** Parses the command line and runs `calls` with the workflow and a client. */
export async function floorRun(calls) {
  const program = new Command('floor');
  program
    .command('run')
    .argument('<file>')
    .option('--quiet', 'as conclave takes it')
    .action(async (file) => calls(parseDocument(readFileSync(file, 'utf8'), { keepSourceTokens: true }).toJS(), new Anthropic()));
  await program.parseAsync();
}
