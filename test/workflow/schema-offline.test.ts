import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/**
 * The workflow schema editors read (yaml-language-server, VS Code) must need nothing from the
 * network: behind a firewall a remote `$ref` leaves them with no validation and no completion.
 */
it('the workflow schema refers only to itself, and compiles with nothing fetched', () => {
  const schema = JSON.parse(readFileSync(join(ROOT, 'schemas', 'workflow.schema.json'), 'utf8')) as unknown;
  const refs: string[] = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        if (['$ref', '$dynamicRef'].includes(k) && typeof child === 'string') refs.push(child);
        visit(child);
      }
    }
  };
  visit(schema);
  expect(refs.length).toBeGreaterThan(0);
  expect(refs.filter((r) => !r.startsWith('#'))).toEqual([]);
  // An ajv that may load nothing compiles it: every reference resolves inside the file.
  const Ajv = (Ajv2020 as unknown as { default?: typeof Ajv2020 }).default ?? Ajv2020;
  const ajv = new Ajv({ strict: false, loadSchema: () => Promise.reject(new Error('no network')) });
  const validate = ajv.compile(schema as object);
  expect(validate({ name: 'x', agents: { lead: { role: 'manager' } }, kickoff: 'hi', outputs: { verdict: { type: 'string', enum: ['a', 'b'] } } })).toBe(true);
  expect(validate({ name: 'x', agents: { lead: { role: 'manager' } }, kickoff: 'hi', outputs: { verdict: { type: 'text' } } })).toBe(false);
});
