// Compiles schemas/workflow.schema.json into a standalone validator at build time,
// so that `conclave validate` starts without loading or compiling ajv (about 150 ms).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import Ajv from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';

const root = new URL('../', import.meta.url);
const schema = JSON.parse(readFileSync(new URL('schemas/workflow.schema.json', root), 'utf8'));
// verbose keeps parentSchema on each error: the loader reads the allowed keys from it for "did you mean".
const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true, code: { source: true, esm: true } });
// ajv's ESM output still calls require() for its runtime helpers: turn those into imports.
const imports = [];
const code = standaloneCode(ajv, ajv.compile(schema)).replace(/require\("([^"]+)"\)/g, (_, module) => {
  imports.push(`import helper${imports.length} from ${JSON.stringify(`${module}.js`)};`);
  return `helper${imports.length - 1}`;
});
mkdirSync(new URL('generated/', root), { recursive: true });
writeFileSync(new URL('generated/workflow-validator.js', root), `${imports.join('\n')}\n${code}`);
writeFileSync(
  new URL('generated/workflow-validator.d.ts', root),
  `import type { ErrorObject } from 'ajv';
declare function validate(data: unknown): boolean;
declare namespace validate { let errors: ErrorObject[] | null | undefined; }
export default validate;
`,
);
