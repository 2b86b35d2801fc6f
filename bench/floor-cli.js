// The floor of `conclave validate`'s start: only the two libraries it cannot do without (commander
// for the command line, yaml for the file with positions), bundled into one file as conclave is,
// parsing the same workflow. bench/cold-start.js times it beside conclave (docs/BENCHMARKS.md).
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { parseDocument } from 'yaml';

const program = new Command('floor');
program
  .command('validate')
  .argument('<file>')
  .action((file) => {
    const document = parseDocument(readFileSync(file, 'utf8'), { keepSourceTokens: true });
    console.log(document.errors.length === 0 ? `${file}: ok` : `${file}: ${document.errors.length} errors`);
  });
program.parse();
