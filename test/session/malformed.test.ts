import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conclave, ROOT } from '../helpers/cli.js';

/**
 * Malformed session files (DESIGN §10, issue 11): each one, given to `show` and to `resume`,
 * must end in exit 2 with one plain sentence naming the file (and the line, where there is one),
 * never a stack trace. Each is made from a valid format-1 session by one change.
 */
const BASE = readFileSync(join(ROOT, 'test/fixtures/session/format-1/stopped.jsonl'), 'utf8').trimEnd().split('\n');
const header = () => JSON.parse(BASE[0]!) as Record<string, unknown>;
const event = (i: number) => JSON.parse(BASE[i]!) as Record<string, unknown>;
const indexOf = (type: string) => BASE.findIndex((l, i) => i > 0 && JSON.parse(l).type === type);
const lines = (...ls: string[]) => `${ls.join('\n')}\n`;
const withHeader = (change: (h: Record<string, unknown>) => void) => {
  const h = header();
  change(h);
  return lines(JSON.stringify(h), ...BASE.slice(1));
};
const withEvent = (type: string, change: (e: Record<string, unknown>) => unknown) => {
  const i = indexOf(type);
  const e = event(i);
  const changed = change(e) ?? e;
  return lines(...BASE.slice(0, i), JSON.stringify(changed), ...BASE.slice(i + 1));
};
const withLine = (at: number, line: string) => lines(...BASE.slice(0, at), line, ...BASE.slice(at + 1));

/** name → file content, and the line the message must name (0: none). */
const CASES: [string, string | Buffer, number][] = [
  ['empty', '', 0],
  ['only a torn line', '{"type":"hea', 0],
  ['header not JSON', lines('not json', ...BASE.slice(1)), 1],
  ['header an array', lines('[1,2]', ...BASE.slice(1)), 1],
  ['header null', lines('null', ...BASE.slice(1)), 1],
  ['header without type', withHeader((h) => delete h.type), 1],
  ['header of another type', withHeader((h) => (h.type = 'message')), 1],
  ['format a string', withHeader((h) => (h.format = '1')), 0],
  ['format from the future', withHeader((h) => (h.format = 99)), 0],
  ['no run_id', withHeader((h) => delete h.run_id), 1],
  ['no workflow', withHeader((h) => delete h.workflow), 1],
  ['workflow path a number', withHeader((h) => ((h.workflow as Record<string, unknown>).path = 5)), 1],
  ['workflow path empty', withHeader((h) => ((h.workflow as Record<string, unknown>).path = '')), 1],
  ['inputs null', withHeader((h) => (h.inputs = null)), 1],
  ['inputs a list', withHeader((h) => (h.inputs = [])), 1],
  ['session a number', withHeader((h) => (h.session = 5)), 1],
  ['no started_at', withHeader((h) => delete h.started_at), 1],
  ['forked_from a string', withHeader((h) => (h.forked_from = 'x')), 1],
  ['an event null', withLine(3, 'null'), 4],
  ['an event a list', withLine(3, '[]'), 4],
  ['an event a string', withLine(3, '"event"'), 4],
  ['an event a number', withLine(3, '7'), 4],
  ['broken JSON in the middle', withLine(3, '{"seq":3,"type":'), 4],
  ['no seq', withEvent('message', (e) => delete e.seq), indexOf('message') + 1],
  ['seq a string', withEvent('message', (e) => (e.seq = String(e.seq))), indexOf('message') + 1],
  ['a gap in seq', withEvent('message', (e) => (e.seq = Number(e.seq) + 5)), indexOf('message') + 1],
  ['a repeated seq', withEvent('message', (e) => (e.seq = Number(e.seq) - 1)), indexOf('message') + 1],
  ['no type', withEvent('message', (e) => delete e.type), indexOf('message') + 1],
  ['type a number', withEvent('message', (e) => (e.type = 5)), indexOf('message') + 1],
  ['a message without message', withEvent('message', (e) => delete e.message), indexOf('message') + 1],
  ['a message whose text is a number', withEvent('message', (e) => ((e.message as Record<string, unknown>).text = 5)), indexOf('message') + 1],
  ['recipients a string', withEvent('message', (e) => ((e.message as Record<string, unknown>).recipients = 'lead')), indexOf('message') + 1],
  ['a model call without response', withEvent('model_call', (e) => delete e.response), indexOf('model_call') + 1],
  ['response content a string', withEvent('model_call', (e) => ((e.response as Record<string, unknown>).content = 'x')), indexOf('model_call') + 1],
  ['a model call whose agent is a number', withEvent('model_call', (e) => (e.agent = 5)), indexOf('model_call') + 1],
  ['cost_usd a string', withEvent('model_call', (e) => (e.cost_usd = 'cheap')), indexOf('model_call') + 1],
  ['turn_started messages of strings', withEvent('turn_started', (e) => (e.messages = ['a'])), indexOf('turn_started') + 1],
  ['tool_result is_error a string', withEvent('tool_result', (e) => (e.is_error = 'no')), indexOf('tool_result') + 1],
  ['tool_call without tool_use_id', withEvent('tool_call', (e) => delete e.tool_use_id), indexOf('tool_call') + 1],
  ['run_started limits null', withEvent('run_started', (e) => (e.limits = null)), indexOf('run_started') + 1],
  ['maxTurns a string', withEvent('run_started', (e) => ((e.limits as Record<string, unknown>).maxTurns = 'x')), indexOf('run_started') + 1],
  ['ack through a float', withEvent('ack', (e) => (e.through = 1.5)), indexOf('ack') + 1],
  ['turn_ended elapsed_ms null', withEvent('turn_ended', (e) => (e.elapsed_ms = null)), indexOf('turn_ended') + 1],
  ['run_ended exit_code a string', withEvent('run_ended', (e) => (e.exit_code = 'x')), indexOf('run_ended') + 1],
  ['run_ended outputs a list', withEvent('run_ended', (e) => (e.outputs = [])), indexOf('run_ended') + 1],
  ['deeply nested JSON', withLine(3, `{"seq":3,"type":"ack","x":${'['.repeat(200_000)}${']'.repeat(200_000)}}`), 4],
  ['a binary file', Buffer.from([0, 159, 146, 150, 10, 0, 0, 10]), 1],
  ['a line of garbage', withLine(2, 'x'.repeat(1_000_000)), 3],
];

async function check(dir: string, file: string, line: number) {
  for (const args of [
    ['show', file],
    ['resume', file],
    ['run', file],
  ]) {
    const r = await conclave(args, { cwd: dir, env: { ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } });
    const what = `${args.join(' ')}: ${r.stderr}`;
    expect(r.code, what).toBe(2);
    expect(r.stderr, what).toMatch(/^conclave: /);
    expect(r.stderr, what).toContain(file);
    if (line > 0 && args[0] !== 'run') expect(r.stderr, what).toContain(`${file}:${line}:`);
    expect(r.stderr, what).not.toMatch(/\n\s+at |internal error/);
  }
}

describe('malformed session files', () => {
  it(`${CASES.length} of them, given to show, resume and run: exit 2, the file and line named, no stack trace`, async () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40);
    const dir = mkdtempSync(join(tmpdir(), 'conclave-malformed-'));
    cpSync(join(ROOT, 'test/fixtures/session/format-1/workflow.yml'), join(dir, 'workflow.yml'));
    const files = CASES.map(([name, content], i) => {
      const file = `${String(i).padStart(2, '0')}-${name.replace(/\W+/g, '-')}.jsonl`;
      writeFileSync(join(dir, file), content);
      return file;
    });
    for (let i = 0; i < CASES.length; i += 4) {
      await Promise.all(files.slice(i, i + 4).map((file, j) => check(dir, file, CASES[i + j]![2])));
    }
  }, 120_000);

  it('a directory or a missing file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-malformed-'));
    mkdirSync(join(dir, 'a-directory.jsonl'));
    for (const file of ['a-directory.jsonl', 'missing.jsonl']) {
      for (const command of ['show', 'resume']) {
        const r = await conclave([command, file], { cwd: dir, env: { ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef' } });
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`^conclave: cannot read ${file}: (no such file|it is a directory)\\n$`));
      }
    }
  });
});
