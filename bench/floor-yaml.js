// The lowest floor of `conclave validate`'s start: yaml alone parsing the workflow, no command line
// (bench/cold-start.js). What no validate that reads the file with yaml can start faster than.
import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';

const file = process.argv[3];
const document = parseDocument(readFileSync(file, 'utf8'), { keepSourceTokens: true });
console.log(document.errors.length === 0 ? `${file}: ok` : `${file}: ${document.errors.length} errors`);
