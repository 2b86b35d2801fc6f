import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

/** The official SARIF 2.1.0 schema (draft-04), with the Ajv 6 that reads draft-04, as @microsoft/jest-sarif ships them. */
export function sarifValidator(): (value: unknown) => string[] {
  const require = createRequire(createRequire(import.meta.url).resolve('@microsoft/jest-sarif'));
  const Ajv = require('ajv') as new (
    options: object,
  ) => { addMetaSchema(s: unknown): void; compile(s: unknown): ((v: unknown) => boolean) & { errors?: { dataPath: string; message: string }[] } };
  const ajv = new Ajv({ schemaId: 'id', allErrors: true, jsonPointers: true, unknownFormats: 'ignore' });
  ajv.addMetaSchema(require('ajv/lib/refs/json-schema-draft-04.json'));
  const validate = ajv.compile(require('./schemas/sarif-2.1.0-rtm.5.json'));
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.dataPath} ${e.message}`));
}

/**
 * The rules GitHub's code scanning applies to an upload, as Microsoft's SARIF multitool checks
 * them (`validate --rule-kind Gh`): the error lines it prints for `file`, none when it passes.
 */
export function githubSarifErrors(file: string): string[] {
  const bin = createRequire(import.meta.url).resolve('@microsoft/sarif-multitool-linux/Sarif.Multitool');
  const out = execFileSync(bin, ['validate', file, '--rule-kind', 'Gh'], { encoding: 'utf8', env: { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1' } });
  if (!/Analysis completed successfully/.test(out)) throw new Error(`the SARIF multitool did not finish:\n${out}`);
  return out.split('\n').filter((line) => /: (error|warning) /.test(line));
}
