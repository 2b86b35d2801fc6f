// Compiles schemas/workflow.schema.json into a standalone validator at build time,
// so that `conclave validate` starts without loading or compiling ajv (about 150 ms).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import Ajv from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';

const root = new URL('../', import.meta.url);
const schema = JSON.parse(readFileSync(new URL('schemas/workflow.schema.json', root), 'utf8'));
// The file editors read names nothing on the network (behind a firewall a remote $ref leaves them with no
// validation at all); the validator conclave runs checks each typed output against JSON Schema's own
// 2020-12 meta-schema, which ajv holds itself.
schema.$defs.typedOutput.$ref = 'https://json-schema.org/draft/2020-12/schema';
/** A schema without its annotations: the keys of `properties` and `$defs` are names and stay. */
function rules(node) {
  if (Array.isArray(node)) return node.map(rules);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (['description', 'title', 'examples', '$comment', '$schema', '$id'].includes(key)) continue;
    const named = key === 'properties' || key === '$defs' || key === 'patternProperties';
    out[key] = named
      ? Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, rules(schema)]))
      : key === 'enum' || key === 'const'
        ? value
        : rules(value);
  }
  return out;
}

// verbose keeps parentSchema on each error: the loader reads the allowed keys from it for "did you mean".
const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true, code: { source: true, esm: true } });
// ajv's ESM output still calls require() for its runtime helpers: turn those into imports.
const imports = [];
// A CommonJS helper's `exports.default` is `.default.default` of the namespace under Node, but
// `.default` under bundlers' interop (vitest): take whichever holds the function.
const code = standaloneCode(ajv, ajv.compile(schema)).replace(/require\("([^"]+)"\)/g, (_, module) => {
  const n = imports.length;
  imports.push(`import * as helper${n}_module from ${JSON.stringify(`${module}.js`)};`);
  imports.push(`const helper${n} = { default: helper${n}_module.default?.default ?? helper${n}_module.default };`);
  return `helper${n}`;
});
mkdirSync(new URL('generated/', root), { recursive: true });
// The same schema without what only people and editors read: what src/workflow/schema-holds.ts walks.
writeFileSync(new URL('generated/workflow-rules.json', root), `${JSON.stringify(rules(schema))}\n`);
writeFileSync(new URL('generated/workflow-validator.js', root), `${imports.join('\n')}\n${code}`);
writeFileSync(
  new URL('generated/workflow-validator.d.ts', root),
  `import type { ErrorObject } from 'ajv';
declare function validate(data: unknown): boolean;
declare namespace validate { let errors: ErrorObject[] | null | undefined; }
export default validate;
`,
);
