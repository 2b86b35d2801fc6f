// The floor of `conclave validate`'s start: only the two libraries it cannot do without (commander
// for the command line, yaml for the file with positions), bundled into one file as conclave is,
// parsing the same workflow. bench/cold-start.js times it beside conclave (docs/BENCHMARKS.md),
// also from a start snapshot: built once (`--build-snapshot`), the program is made and yaml's
// parser compiled then, and each start only parses the command line and the file.
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
import { Command } from 'commander';
import { parseDocument } from 'yaml';

const parse = (file) => parseDocument(readFileSync(file, 'utf8'), { keepSourceTokens: true });
const program = new Command('floor');
program
  .command('validate')
  .argument('<file>')
  .action((file) => {
    const document = parse(file);
    console.log(document.errors.length === 0 ? `${file}: ok` : `${file}: ${document.errors.length} errors`);
  });
if (v8.startupSnapshot?.isBuildingSnapshot()) {
  parse('examples/pr-review.yml');
  // A snapshot's process.argv has no script: the command is its first argument.
  v8.startupSnapshot.setDeserializeMainFunction(() => program.parse(process.argv.slice(1), { from: 'user' }));
} else {
  program.parse();
}
