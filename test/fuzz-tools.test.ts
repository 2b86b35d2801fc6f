import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mutateJson, random } from './helpers/random.js';
import { annotate } from '../src/agents/tools/annotate.js';
import { grep } from '../src/agents/tools/grep.js';
import type { AgentTool, ToolContext } from '../src/agents/tools/tool.js';
import { listFiles, readFile, writeFile } from '../src/agents/tools/workspace.js';
import { Workspace } from '../src/agents/tools/workspace-root.js';
import type { ModelResponse } from '../src/provider/client.js';
import { withBoundedInputs } from '../src/provider/input-depth.js';
import { Masker } from '../src/session/masker.js';
import { isModelResponse } from '../src/provider/response-shape.js';

/**
 * Seeded fuzzing of what a hostile model and a poisoned cache hand conclave (docs/security.md):
 * tool calls with inputs of every wrong shape, and cache entries of every wrong shape. A tool
 * answers with a result (an error result for bad input), never an exception, and writes nothing
 * outside the workspace nor into .git or .conclave; a cache entry is taken for a response only
 * when everything a turn reads from it is there. FUZZ_SEED=N repeats a run.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 600;

const SECRET = 'sk-ant-fuzz-0123456789abcdef';
const PATH_PIECES = [
  '.',
  '..',
  '/',
  '//',
  '.git',
  '.GIT',
  '.conclave',
  '.github',
  'workflows',
  'src',
  'a.js',
  'a.js/',
  '\u0000',
  ' ',
  '~',
  '$HOME',
  '%2e%2e',
  '\\',
  'x'.repeat(300),
  'é',
  'link',
  'fifo',
];
const SCALARS: unknown[] = [null, true, false, 0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER + 2, '', 'x', '.*', '(a+)+$', '[', SECRET, [], {}, [1], { a: 1 }];
const KEYS = [
  'path',
  'content',
  'max_bytes',
  'recursive',
  'pattern',
  'ignore_case',
  'line',
  'end_line',
  'level',
  'title',
  'message',
  '__proto__',
  'constructor',
];

function pick<T>(items: readonly T[], rand: () => number): T {
  return items[Math.floor(rand() * items.length)]!;
}

function randomPath(rand: () => number): string {
  const parts = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(PATH_PIECES, rand));
  return parts.join(rand() < 0.7 ? '/' : '');
}

function deep(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = rand01(i) ? { a: value } : [value];
  return value;
}
const rand01 = (i: number) => i % 2 === 0;

function randomValue(key: string, rand: () => number): unknown {
  const r = rand();
  if (key === 'path' && r < 0.6) return randomPath(rand);
  if (r < 0.05) return deep(100 + Math.floor(rand() * 100));
  if (r < 0.1) return 'y'.repeat(1 + Math.floor(rand() * 200_000));
  return pick(SCALARS, rand);
}

/** A plausible call of `tool`, then up to three hostile changes: a value replaced, a key dropped, a key added. */
function randomInput(tool: AgentTool, rand: () => number): Record<string, unknown> {
  const plausible: Record<string, Record<string, unknown>> = {
    read_file: { path: pick(['src/a.js', 'src', '.git/config', 'missing.txt'], rand) },
    write_file: { path: pick(['out/new.txt', 'src/b.js', '.git/config', '.conclave/x'], rand), content: 'text' },
    list_files: { path: pick(['.', 'src', '.git'], rand), recursive: rand() < 0.5 },
    annotate: { path: 'src/a.js', line: 1 + Math.floor(rand() * 3), level: pick(['notice', 'warning', 'failure'], rand), message: 'm' },
    grep: { pattern: 'one', path: '.' },
  };
  const input: Record<string, unknown> = { ...plausible[tool.definition.name] };
  const keys = [...Object.keys(tool.definition.input_schema.properties), ...KEYS];
  for (let k = Math.floor(rand() * 4); k > 0; k--) {
    const key = pick(keys, rand);
    if (rand() < 0.2) delete input[key];
    else Object.defineProperty(input, key, { value: randomValue(key, rand), enumerable: true, configurable: true, writable: true });
  }
  return input;
}

/** A copy of `value` with one place replaced, deleted or re-typed. */
function mutate(value: unknown, rand: () => number): unknown {
  const copy = JSON.parse(JSON.stringify(value)) as unknown;
  mutateJson(copy, rand, () => (rand() < 0.1 ? deep(80) : pick(SCALARS, rand)));
  return copy;
}

describe(`fuzzing tool calls and cache entries (seed ${SEED})`, () => {
  it(`${CASES} hostile tool calls end in a tool result, never an exception, and write nothing they must not`, async () => {
    const rand = random(SEED);
    const parent = mkdtempSync(join(tmpdir(), 'conclave-fuzz-tools-'));
    const root = join(parent, 'ws');
    mkdirSync(join(root, '.git'), { recursive: true });
    mkdirSync(join(root, '.conclave'));
    mkdirSync(join(root, 'src'));
    writeFileSync(join(root, '.git', 'config'), '[core]\n');
    writeFileSync(join(root, 'src', 'a.js'), 'one\ntwo\n');
    const workspace = new Workspace(root);
    const controller = new AbortController();
    const context = { agent: 'lead', workspace, env: {}, signal: controller.signal, complete: () => {} } as unknown as ToolContext;
    // (grep's worker is a bundled file: from source it answers that it is missing, which is a result too.)
    const tools = [readFile, writeFile, listFiles, annotate, grep];
    const done = new Map<string, number>();
    const masker = new Masker([SECRET]);
    for (let n = 0; n < CASES; n++) {
      const tool = pick(tools, rand);
      const input = randomInput(tool, rand);
      const where = `case ${n} of seed ${SEED}: ${tool.definition.name}`;
      let result: Awaited<ReturnType<AgentTool['run']>>;
      try {
        result = await tool.run(input, context);
        // What the session would record of the call: bounded, then masked into one JSON line.
        const bounded = withBoundedInputs({
          content: [{ type: 'tool_use', id: 't', name: tool.definition.name, input }],
          stop_reason: 'tool_use',
        } as unknown as ModelResponse);
        masker.line({ type: 'model_call', response: bounded });
      } catch (e) {
        throw new Error(`${where} threw ${(e as Error).stack}`);
      }
      expect(typeof result.content, where).toBe('string');
      if (!result.isError) done.set(tool.definition.name, (done.get(tool.definition.name) ?? 0) + 1);
    }
    // The inputs are not all refused at the door: every workspace tool did real work some of the time.
    for (const name of ['read_file', 'write_file', 'list_files']) expect(done.get(name) ?? 0, name).toBeGreaterThan(5);
    expect(readdirSync(parent)).toEqual(['ws']);
    expect(readFileSync(join(root, '.git', 'config'), 'utf8')).toBe('[core]\n');
    expect(readdirSync(join(root, '.git'))).toEqual(['config']);
    expect(readdirSync(join(root, '.conclave'))).toEqual([]);
  }, 120_000);

  it(`${CASES} mutated cache entries are taken for a response only when a turn can read them`, () => {
    const rand = random(SEED + 1);
    const valid = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-5-5',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 'sig' },
        { type: 'text', text: 'hello' },
        { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.js' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0 },
    };
    expect(isModelResponse(valid)).toBe(true);
    let refused = 0;
    for (let n = 0; n < CASES; n++) {
      let entry: unknown = valid;
      for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) entry = mutate(entry, rand);
      const where = `case ${n} of seed ${SEED}: ${JSON.stringify(entry).slice(0, 300)}`;
      let ok: boolean;
      try {
        ok = isModelResponse(entry);
      } catch (e) {
        throw new Error(`${where} threw ${(e as Error).stack}`);
      }
      if (!ok) {
        refused++;
        continue;
      }
      // Everything a turn and the accounting read is there, of its kind.
      const r = entry as ModelResponse;
      for (const b of r.content) {
        if (b.type === 'text') expect(typeof b.text, where).toBe('string');
        else if (b.type === 'tool_use')
          expect(typeof b.name === 'string' && typeof b.id === 'string' && b.input !== null && typeof b.input === 'object', where).toBe(true);
      }
      if (r.usage)
        for (const n of [r.usage.input_tokens, r.usage.output_tokens]) expect(n === undefined || n === null || Number.isSafeInteger(n), where).toBe(true);
      withBoundedInputs(r);
    }
    expect(refused).toBeGreaterThan(CASES / 4);
  });
});
