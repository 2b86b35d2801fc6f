import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { changedRequest, unifiedDiff } from '../../src/cli/test/changed-request.js';
import type { SessionEvent } from '../../src/session/format.js';
import { loadWorkflow } from '../../src/workflow/load.js';

/** What a case whose workflow changed is told (docs/testing-workflows.md: reading a failure): the place, the diff, the line. */

const file = join(mkdtempSync(join(tmpdir(), 'conclave-changed-')), 'w.yml');
writeFileSync(
  file,
  [
    'name: t',
    'inputs:',
    '  tone: { type: string }',
    'defaults:',
    '  max_tokens: 4096',
    'kickoff: go',
    'agents:',
    '  lead:',
    '    role: manager',
    '    model: claude-opus-5',
    '    system: |',
    '      Be brief and exact in every answer.',
    '      Be $<< inputs.tone >> to all.',
    '      $<< inputs.tone >>',
    '',
  ].join('\n'),
);
const loaded = await loadWorkflow(file);
const workflow = loaded.workflow!;
const call = [{ seq: 6, type: 'model_call', agent: 'lead', turn: 2, step: 3 } as unknown as SessionEvent];
const change = (path: string, recorded: unknown, now: unknown, event = 6) => changedRequest({ event, path, recorded, now }, call, 'rec.jsonl', workflow);

describe('a changed request', () => {
  it('names the call and the place, without the request. prefix only at its start', () => {
    expect(change('request.system', 'a', 'b').message.split('\n')[0]).toBe(
      "the workflow changed: @lead's model call 3 of turn 2 differs from the recording at system",
    );
    expect(change('request.messages.0.request.x', 'a', 'b').message.split('\n')[0]).toMatch(/differs from the recording at messages\.0\.request\.x$/);
    expect(change('', 'a', 'b', 9).message.split('\n')[0]).toBe('the run differs from the recording at event #9 (the end of the recording): the event');
    expect(change('request.system', 'a', 'b').message.split('\n').at(-1)).toBe('see the recorded call: conclave show rec.jsonl --event 6');
  });

  it('finds the line: a changed line of a prompt, an expression standing for any value, a model, a number; none for a line that is only an expression', () => {
    expect(change('request.system', 'Be brief and exact in every answer.\nold', 'Be brief and exact in every answer.\nBe kind to all.').at).toEqual({
      file,
      line: 13,
      col: 7,
    });
    expect(change('request.system', 'x\nBe brief', 'x\nBe brief and exact in every answer.').at).toEqual({ file, line: 12, col: 7 });
    // The first changed line is gone: the line before it is found.
    expect(change('request.system', 'Be brief and exact in every answer.\nremoved', 'Be brief and exact in every answer.').at).toEqual({
      file,
      line: 12,
      col: 7,
    });
    // A line that is only an expression matches nothing by its own words.
    expect(change('request.system', 'a\nkind', 'a\nstern').at).toBeUndefined();
    expect(change('request.model', 'claude-sonnet-5-5', 'claude-opus-5').at).toEqual({ file, line: 10, col: 5 });
    expect(change('request.max_tokens', 16000, 4096).at).toEqual({ file, line: 5, col: 3 });
    expect(change('request.stream', false, true).at).toBeUndefined();
    expect(change('request.tools', ['a'], ['b']).at).toBeUndefined();
  });
});

describe('the unified diff', () => {
  it('texts by lines with 3 of context; other values as JSON; nothing as empty', () => {
    expect(unifiedDiff('system', 'a\nb\nc\nd\ne\nf\ng', 'a\nb\nc\nd\nE\nf\ng')).toEqual([
      '--- recorded system',
      '+++ now system',
      '@@ -2,6 +2,6 @@',
      ' b',
      ' c',
      ' d',
      '-e',
      '+E',
      ' f',
      ' g',
    ]);
    expect(unifiedDiff('tools', ['grep'], ['grep', 'read_file'])).toEqual([
      '--- recorded tools',
      '+++ now tools',
      '@@ -1,3 +1,4 @@',
      ' [',
      '-  "grep"',
      '+  "grep",',
      '+  "read_file"',
      ' ]',
    ]);
    expect(unifiedDiff('x', undefined, 'new\n')).toEqual(['--- recorded x', '+++ now x', '@@ -0,0 +1,1 @@', '+new']);
    expect(unifiedDiff('x', 7, true)).toEqual(['--- recorded x', '+++ now x', '@@ -1,1 +1,1 @@', '-7', '+true']);
  });

  it('is cut after 40 lines, saying how many more', () => {
    const many = (c: string) => Array.from({ length: 30 }, (_, i) => `${c}${i}`).join('\n');
    const diff = unifiedDiff('system', many('a'), many('b'));
    expect(diff).toHaveLength(41);
    expect(diff.at(-1)).toBe('… 23 more lines');
    expect(unifiedDiff('system', 'a'.repeat(10), 'b')).toHaveLength(5);
  });
});
