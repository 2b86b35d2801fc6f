import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { EVENTS, HEADER } from '../../src/session/session-events.js';
import type { Schema } from '../../src/session/schema.js';
import { ROOT } from '../helpers/cli.js';

/**
 * docs/session-format.md's table of events is made from the events' schemas, so the reference
 * cannot drift from what the reader checks. `UPDATE_DOCS=1 npx vitest run
 * test/session/reference-doc.test.ts` writes the table anew after a schema changes.
 */
const PAGE = join(ROOT, 'docs', 'session-format.md');
const START = '<!-- events: made from src/session/session-events.ts -->';
const END = '<!-- end of events -->';

function fieldsOf(fields: Record<string, Schema<unknown>>): string {
  return Object.entries(fields)
    .map(([name, schema]) => `\`${name}\`${schema.optional ? ' (optional)' : ''}: ${schema.doc.replace(/\|/g, '\\|')}`)
    .join('; ');
}

function eventTable(): string {
  const rows = Object.entries(EVENTS).map(([type, { schema, about }]) => `| \`${type}\` | ${fieldsOf(schema.fields)} | ${about} |`);
  return ['| type | fields | what it records |', '|---|---|---|', ...rows].join('\n');
}

it('the reference lists every event with the fields its schema gives', () => {
  const page = readFileSync(PAGE, 'utf8');
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  expect(start, `docs/session-format.md has no "${START}" line`).toBeGreaterThan(-1);
  const table = eventTable();
  if (process.env.UPDATE_DOCS === '1') writeFileSync(PAGE, `${page.slice(0, start + START.length)}\n${table}\n${page.slice(end)}`);
  expect(page.slice(start + START.length, end).trim()).toBe(table);
});

it("the header's table names each field of the header's schema, and no other", () => {
  const page = readFileSync(PAGE, 'utf8');
  const section = page.slice(page.indexOf('## Line 1: the header'), page.indexOf('## Events'));
  const named = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]);
  expect(named).toEqual(Object.keys(HEADER.fields));
});
