import { describe, expect, it } from 'vitest';
import { findMentions } from '../../src/channel/mentions.js';

const AGENTS = new Set(['lead', 'code', 'code-review', 'data_eng', 'qa', 'x1']);

// [text, known mentions in order, unknown names, @all written]
const TABLE: [string, string[], string[], boolean][] = [
  ['@lead please look', ['lead'], [], false],
  ['please look, @lead', ['lead'], [], false],
  ['@lead: the diff', ['lead'], [], false],
  ['@lead, @qa and @code.', ['lead', 'qa', 'code'], [], false],
  ['(@lead) and [@qa]', ['lead', 'qa'], [], false],
  ['"@lead" or \'@qa\'', ['lead', 'qa'], [], false],
  ['@lead? @qa! @code;', ['lead', 'qa', 'code'], [], false],
  ['@code-review is not @code', ['code-review', 'code'], [], false],
  ['@code-reviewer', [], ['code-reviewer'], false],
  ['@data_eng knows', ['data_eng'], [], false],
  ['@lead- dash after', ['lead'], [], false],
  ['mail lead@example.com', [], [], false],
  ['a@lead b', [], [], false],
  ['see https://x.com/@lead', [], [], false],
  ['install @code/pkg', [], [], false],
  ['`@lead` in inline code', [], [], false],
  ['``code with ` and @lead``', [], [], false],
  ['```\n@lead in a fence\n```\n@qa after', ['qa'], [], false],
  ['~~~md\n@lead\n~~~', [], [], false],
  ['```\nunclosed fence @lead', [], [], false],
  ['`unclosed @lead', ['lead'], [], false],
  ['@all please vote', [], [], true],
  ['@all, @lead first', ['lead'], [], true],
  ['@Lead is not lead', [], ['Lead'], false],
  ['@nobody here', [], ['nobody'], false],
  ['line one\n@lead at line start', ['lead'], [], false],
  ['mid-sentence@lead', [], [], false],
  ['é@lead', [], [], false],
  ['@leadé', [], [], false],
  ['«@lead» and ‘@qa’', ['lead', 'qa'], [], false],
  ['@lead，thanks', ['lead'], [], false],
  ['@x1 and @x12', ['x1'], ['x12'], false],
  ['@ alone and @@lead', [], [], false],
  ['email: @lead.', ['lead'], [], false],
  ['@lead @lead twice', ['lead', 'lead'], [], false],
];

describe('mentions', () => {
  it('has at least 30 cases', () => expect(TABLE.length).toBeGreaterThanOrEqual(30));

  it.each(TABLE)('%j', (text, known, unknown, all) => {
    const scan = findMentions(text, AGENTS);
    expect(scan.known.map((m) => m.name)).toEqual(known);
    expect(scan.unknown.map((m) => m.name)).toEqual(unknown);
    expect(scan.all).toBe(all);
  });

  it('gives each mention its span in the text', () => {
    const text = 'hi @code-review, and `@qa` then @qa';
    const scan = findMentions(text, AGENTS);
    expect(scan.known.map((m) => text.slice(m.start, m.end))).toEqual(['@code-review', '@qa']);
    expect(scan.known[1]!.start).toBe(text.lastIndexOf('@qa'));
  });
});
