import { createRequire } from 'node:module';

/** The official SARIF 2.1.0 schema (draft-04), with the Ajv 6 that reads draft-04, as @microsoft/jest-sarif ships them. */
export function sarifValidator(): (value: unknown) => string[] {
  const require = createRequire(createRequire(import.meta.url).resolve('@microsoft/jest-sarif'));
  const Ajv = require('ajv') as new (options: object) => { addMetaSchema(s: unknown): void; compile(s: unknown): ((v: unknown) => boolean) & { errors?: { dataPath: string; message: string }[] } };
  const ajv = new Ajv({ schemaId: 'id', allErrors: true, jsonPointers: true, unknownFormats: 'ignore' });
  ajv.addMetaSchema(require('ajv/lib/refs/json-schema-draft-04.json'));
  const validate = ajv.compile(require('./schemas/sarif-2.1.0-rtm.5.json'));
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.dataPath} ${e.message}`));
}

