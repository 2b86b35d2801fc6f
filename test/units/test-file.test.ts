import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTestFile } from '../../src/cli/test/test-file.js';

/** The test file's reader (src/cli/test/test-file.ts) from source: what it takes, and each problem at its place. */
function load(text: string, files: string[] = ['w.yml', 'r.jsonl']) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-testfile-'));
  mkdirSync(join(dir, 'ws'));
  for (const f of files) writeFileSync(join(dir, f), '');
  writeFileSync(join(dir, 't.test.yml'), text);
  const loaded = loadTestFile(join(dir, 't.test.yml'), dir);
  const sorted = [...loaded.diagnostics].sort((a, b) => a.line - b.line || a.col - b.col);
  return { dir, ...loaded, problems: sorted.map((d) => `${d.line}:${d.col} ${d.message}`) };
}

describe('a test file', () => {
  it('reads every kind of expectation, with its place, inputs as text, paths from the file', () => {
    const { dir, test, problems } = load(`workflow: w.yml
cases:
  - name: one
    inputs: { pr: 42, draft: false, base: main }
    session: r.jsonl
    workspace: ws
    expect:
      status: success
      outputs: { verdict: approve, n: 3, summary: { contains: ok }, id: { matches: "^a+$" } }
      proposals: { verdict: approve }
      tools: [{ agent: "@sec", name: grep, input: { pattern: x } }, { name: vote }]
      not_tools: [{ name: write_file }]
      messages: [{ from: lead, to: "@sec", contains: hi }, { contains: "x" }]
      files: { a.md: text }
      cost_usd: { max: 0.1 }
`);
    expect(problems).toEqual([]);
    expect(test!.workflow).toBe(join(dir, 'w.yml'));
    const c = test!.cases[0]!;
    expect(c).toMatchObject({ name: 'one', at: { line: 3, col: 5 }, inputs: { pr: '42', draft: 'false', base: 'main' } });
    expect(c.session).toBe(join(dir, 'r.jsonl'));
    expect(c.sessionText).toBe('r.jsonl');
    expect(c.workspace).toBe(join(dir, 'ws'));
    expect(c.expect.map((e) => `${e.kind}@${e.at.line}:${e.at.col}`)).toEqual([
      'status@8:7',
      'output@9:18',
      'output@9:36',
      'output@9:42',
      'output@9:69',
      'proposal@10:20',
      'tools@11:7',
      'not_tool@12:19',
      'message@13:18',
      'message@13:60',
      'file@14:16',
      'cost@15:7',
    ]);
    const [, verdict, n, summary, id] = c.expect;
    expect(verdict).toMatchObject({ name: 'verdict', match: { equals: 'approve' } });
    expect(n).toMatchObject({ match: { equals: '3' } });
    expect(summary).toMatchObject({ match: { contains: 'ok' } });
    expect((id as { match: { matches: RegExp } }).match.matches.test('aaa')).toBe(true);
    expect(c.expect[6]).toMatchObject({ calls: [{ agent: 'sec', name: 'grep', input: { pattern: 'x' } }, { name: 'vote' }] });
    expect(c.expect[8]).toMatchObject({ message: { from: 'lead', to: 'sec', contains: 'hi' } });
    expect(c.expect[9]).toMatchObject({ message: { contains: 'x' } });
    expect(c.expect[11]).toMatchObject({ maxUsd: 0.1 });
  });

  it('votes, not_messages and the counts (calls, turns, tokens, wall_s): read, or refused at their place', () => {
    const { test, problems } = load(`workflow: w.yml
cases:
  - name: one
    session: r.jsonl
    expect:
      votes: { security: request-changes, "@octocat": approve }
      not_messages: [{ from: style, contains: injection }]
      calls: { max: 20 }
      turns: { min: 2, max: 12 }
      tokens: { max: 100000 }
      wall_s: { max: 90.5 }
`);
    expect(problems).toEqual([]);
    expect(test!.cases[0]!.expect).toEqual([
      { kind: 'not_message', at: { line: 7, col: 22 }, message: { at: { line: 7, col: 22 }, from: 'style', contains: 'injection' } },
      { kind: 'vote', at: { line: 6, col: 16 }, voter: 'security', option: 'request-changes' },
      { kind: 'vote', at: { line: 6, col: 43 }, voter: '@octocat', option: 'approve' },
      { kind: 'count', at: { line: 8, col: 7 }, what: 'calls', max: 20 },
      { kind: 'count', at: { line: 9, col: 7 }, what: 'turns', min: 2, max: 12 },
      { kind: 'count', at: { line: 10, col: 7 }, what: 'tokens', max: 100000 },
      { kind: 'count', at: { line: 11, col: 7 }, what: 'wall_s', max: 90.5 },
    ]);
    const bad = load(`workflow: w.yml
cases:
  - name: one
    session: r.jsonl
    expect:
      votes: { security: [] }
      not_messages: [{}]
      calls: 3
      turns: { min: 5, max: 2 }
      tokens: { most: 3 }
      wall_s: { max: -1 }
`);
    expect(bad.problems).toEqual([
      '6:26 security must be a text; found a list',
      '7:22 a message names from, to or contains',
      '8:14 calls must be { max: N } or { min: N } or both, N a number of at least 0',
      '9:14 turns.min (5) is over turns.max (2): no run can hold both',
      '10:15 tokens must be { max: N } or { min: N } or both, N a number of at least 0',
      '11:15 wall_s must be { max: N } or { min: N } or both, N a number of at least 0',
    ]);
  });

  it('says every problem at once, at its place, with did-you-mean', () => {
    const { test, problems } = load(`workflow: w.yml
case: []
cases:
  - name: a
    session: r.jsonl
    sesion: x
    expect:
      status: sucess
      outputs: { a: { contains: 1 }, b: { contains: x, matches: y }, c: { matches: "(" }, d: [] }
      proposals: { v: [] }
      tools: [grep, { agent: x }]
      not_tools: { name: x }
      messages: [{}, 3]
      files: [a]
      cost_usd: { max: -1 }
      cost: 1
  - name: a
    session: w.yml
    inputs: { x: { y: 1 } }
    expect: yes
  - just text
`);
    expect(test).toBeUndefined();
    expect(problems).toEqual([
      '2:1 unknown key "case" in the test file (did you mean "cases"?); expected "workflow" or "cases"',
      '6:5 unknown key "sesion" in cases[0] (did you mean "session"?); expected "name", "inputs", "session", "workspace" or "expect"',
      '8:15 status must be one of "success", "failure", "idle", "limit", "provider_error", "error", "interrupted", "refused", "waiting" or "stale"; found the string "sucess" (did you mean "success"?)',
      '9:21 contains and matches take a text; found the number 1',
      '9:41 expected a text, { contains: TEXT } or { matches: REGEX }; found a mapping',
      '9:84 not a regular expression: Invalid regular expression: /(/u: Unterminated group',
      '9:94 expected a text, { contains: TEXT } or { matches: REGEX }; found a list',
      '10:23 v must be a text; found a list',
      '11:15 a tool call is a mapping { agent, name, input }; found the string "grep"',
      '11:21 name must be a text; found an empty value',
      '12:18 not_tools must be a list; found a mapping',
      '13:18 a message names from, to or contains',
      '13:22 a message is a mapping { from, to, contains }; found the number 3',
      '14:14 files must be a mapping; found a list',
      '15:17 cost_usd must be { max: USD }, USD a number of at least 0',
      '16:7 unknown key "cost" in cases[0].expect (did you mean "cost_usd"?); expected "status", "outputs", "proposals", "votes", "tools", "not_tools", "messages", "not_messages", "files", "cost_usd", "calls", "turns", "tokens", "wall_s" or "graders"',
      '17:11 two cases are named "a": give each its own name',
      '18:14 the recording w.yml must be a session file (.jsonl), as conclave writes them',
      '19:18 the input "x" must be a string, a number or true/false',
      '20:13 expect must be a mapping of what must hold',
      '21:5 a case is a mapping (name, inputs, session, expect); found the string "just text"',
    ]);
  });

  it('a workflow or workspace that is not there, not the right kind, or outside the folder; no cases; not a mapping; not YAML', () => {
    expect(load('workflow: nope.yml\ncases: [{ name: a, workspace: w.yml }]\n').problems).toEqual([
      '1:11 the workflow the cases run nope.yml does not exist (a path relative to the test file)',
      '2:31 the workspace w.yml must be a folder',
    ]);
    expect(load('workflow: ws\ncases: [{ name: a, workspace: ../.., session: ../x.jsonl }]\n').problems).toEqual([
      '1:11 the workflow the cases run ws is not a workflow file (.yml or .yaml)',
      '2:31 the workspace ../.. is outside the current folder: keep it below it',
      '2:47 the recording ../x.jsonl is outside the current folder: keep it below it',
    ]);
    expect(load('workflow: w.yml\ncases: [{ name: a, session: "" }]\n').problems).toEqual(['2:29 session must not be empty']);
    expect(load('workflow: w.yml\ncases: []\n').problems).toEqual(['2:8 cases must be a list of at least one case (name, session, expect)']);
    expect(load('workflow: w.yml\n').problems).toEqual(['1:1 cases must be a list of at least one case (name, session, expect)']);
    expect(load('- a\n').problems).toEqual(['1:1 a test file is a mapping with workflow: and cases:; found a list']);
    expect(load('workflow: [\n').problems).toHaveLength(1);
    const missing = loadTestFile(join(tmpdir(), 'no-such-file.test.yml'));
    expect(missing.diagnostics.map((d) => d.message)).toEqual(['cannot read the test file: no such file']);
  });
});
