import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mutateJson, random } from './helpers/random.js';
import { startFakeAnthropic } from './fake-anthropic/server.js';
import { PLAN_TEAM, threeEdits } from './fixtures/plan-team.js';
import { conclave } from './helpers/cli.js';
import { runWorkflow } from './helpers/run-workflow.js';
import { readSession, SessionFileError } from '../src/session/reader.js';
import { replayable } from '../src/session/recording.js';
import { summarize } from '../src/session/summary.js';
import { spansOf } from '../src/trace/spans.js';
import { team } from './channel/team.js';
import { Channel } from '../src/channel/channel.js';
import type { ChannelEvent } from '../src/channel/channel-events.js';
import { MAX_DOCUMENT_CHARS } from '../src/channel/document.js';
import { loadMergeTools } from '../src/channel/documents.js';
import { DOCUMENT_TOOLS } from '../src/agents/tools/documents.js';
import type { ToolContext } from '../src/agents/tools/tool.js';

/**
 * Seeded fuzzing of the document tools (docs/workflow.md: documents) with what a hostile or
 * confused model sends: wrong shapes, unknown names and edits, stale versions, texts past the
 * limit, reviews by non-owners. Every call answers with a tool result, never an exception; no
 * document passes the limit; versions count the changes; only the owner's review closes an
 * edit; and the channel's events rebuild the same documents. FUZZ_SEED=N repeats a run.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 40;
const CALLS = 60;

const AGENTS = ['lead', 'a', 'b', 'c', 'sub', 'd'];
const NAMES = ['plan', 'log', 'notes', 'plan#1', '', 'PLAN', '__proto__', 'constructor'];
const LINES = ['one', 'two', 'three', 'four', 'five', '', '<<<<<<<', '=======', '\u0000', '```', '@all hi'];

const pick = <T>(rand: () => number, values: readonly T[]): T => values[Math.floor(rand() * values.length)]!;

function textOf(rand: () => number, base: string): string {
  const roll = rand();
  if (roll < 0.03) return 'x'.repeat(MAX_DOCUMENT_CHARS + Math.floor(rand() * 3));
  const lines = base.split('\n');
  const changes = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < changes; i++) {
    const at = Math.floor(rand() * (lines.length + 1));
    if (rand() < 0.6 && at < lines.length) lines[at] = pick(rand, LINES);
    else lines.splice(at, rand() < 0.3 ? 1 : 0, pick(rand, LINES));
  }
  return lines.join('\n');
}

/** Mostly a well-formed input; now and then a field of the wrong shape or missing. */
function inputFor(rand: () => number, tool: string, channel: Channel, edits: string[]): Record<string, unknown> {
  const name = rand() < 0.85 ? pick(rand, ['plan', 'plan', 'log']) : pick(rand, NAMES);
  const current = (channel.documents.final()[name]?.text as string | undefined) ?? '';
  const version = channel.documents.final()[name]?.version ?? 1;
  const input: Record<string, unknown> =
    tool === 'read_document'
      ? { name }
      : tool === 'edit_document'
        ? {
            name,
            version: rand() < 0.7 ? Math.max(1, version - Math.floor(rand() * 3)) : pick(rand, [0, -1, 1.5, 99, '1', null]),
            text: textOf(rand, current),
            why: 'w',
          }
        : tool === 'review_edit'
          ? { edit: edits.length && rand() < 0.85 ? pick(rand, edits) : pick(rand, ['plan#0', 'plan#99', '', 'log#1']), accept: rand() < 0.7, why: '' }
          : { name, text: rand() < 0.9 ? pick(rand, LINES.filter(Boolean)) : pick(rand, ['', '  ', 'z'.repeat(MAX_DOCUMENT_CHARS)]) };
  if (rand() < 0.08) {
    const keys = Object.keys(input);
    input[pick(rand, keys)] = pick(rand, [undefined, null, 42, {}, [], true, 'text']);
  }
  return input;
}

describe(`the document tools under fuzzing (FUZZ_SEED=${SEED})`, () => {
  it(`answer ${CASES} × ${CALLS} hostile calls with results, keep the limits, and rebuild from their events`, async () => {
    await loadMergeTools();
    const rand = random(SEED);
    let changes = 0;
    let errors = 0;
    const closed: Record<string, number> = {};
    for (let c = 0; c < CASES; c++) {
      const events: ChannelEvent[] = [];
      const channel = new Channel(team(), (e) => events.push(e));
      channel.documents.open({ name: 'plan', owner: 'lead', mode: 'edit', text: 'one\ntwo\nthree\nfour\nfive\n' });
      channel.documents.open({ name: 'log', owner: 'sub', mode: 'append', text: '' });
      const edits: string[] = [];
      for (let i = 0; i < CALLS; i++) {
        const tool = pick(rand, DOCUMENT_TOOLS);
        const agent = pick(rand, AGENTS);
        const input = inputFor(rand, tool.definition.name, channel, edits);
        const before = events.length;
        const context = { agent, channel } as unknown as ToolContext;
        const result = await tool.run(input, context);
        const where = `seed ${SEED}, case ${c}, call ${i}: @${agent} ${tool.definition.name} ${JSON.stringify(input).slice(0, 200)}`;
        expect(typeof result.content, where).toBe('string');
        if (result.isError) {
          errors++;
          // A refused call changes nothing.
          expect(events.length, where).toBe(before);
        }
        for (const e of events.slice(before)) {
          if (e.type === 'edit_proposed') edits.push(e.edit.id);
          if (e.type === 'edit_closed') {
            expect(e.reviewer, where).toBe(e.edit.startsWith('plan#') ? 'lead' : 'sub');
            closed[e.status] = (closed[e.status] ?? 0) + 1;
          }
          if (e.type === 'document_changed' || e.type === 'document_appended') changes++;
        }
      }
      const final = channel.documents.final();
      for (const [name, d] of Object.entries(final)) {
        expect(d.text.length).toBeLessThanOrEqual(MAX_DOCUMENT_CHARS);
        const made = events.filter((e) => (e.type === 'document_changed' || e.type === 'document_appended') && e.document === name).length;
        expect(d.version, `seed ${SEED}, case ${c}: ${name}`).toBe(made + 1);
      }
      expect(Channel.replay(team(), events).documents.final()).toEqual(final);
    }
    console.log(`document fuzz: ${changes} changes, ${errors} refusals, edits closed ${JSON.stringify(closed)}`);
    // The fuzzing reached both sides.
    expect(changes).toBeGreaterThan(CASES);
    expect(errors).toBeGreaterThan(CASES);
    expect(closed.accepted).toBeGreaterThan(0);
    expect(closed.conflict).toBeGreaterThan(0);
    expect(closed.rejected).toBeGreaterThan(0);
  });

  it('a session of documents, mutated 300 times: read, summarised, replayable and traced, or refused with its line; a sample through the CLI', async () => {
    const server = await startFakeAnthropic(threeEdits());
    const run = await runWorkflow(server, PLAN_TEAM());
    await server.close();
    expect(run.code, run.stderr).toBe(0);
    const lines = readFileSync(join(run.dir, run.json.session as unknown as string), 'utf8')
      .trim()
      .split('\n');
    const documentLines = lines
      .map((l, i) => [l, i] as const)
      .filter(([l]) => /"type":"(document_|edit_)/.test(l))
      .map(([, i]) => i);
    expect(documentLines.length).toBeGreaterThan(8);
    const rand = random(SEED + 1);
    const VALUES = [null, -1, 0, 2, 99, 1.5, '', 'plan', 'plan#9', 'nobody', 'lead', [], {}, true, 'x'.repeat(200_001)];
    const files: string[] = [];
    const readable: string[] = [];
    for (let n = 0; n < 300; n++) {
      // Every other case has not ended, so that resume re-executes it.
      const out = n % 2 ? lines.filter((l) => !l.includes('"type":"run_ended"')) : [...lines];
      for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) {
        const i = pick(rand, documentLines);
        const choice = rand();
        if (choice < 0.15) out.splice(i, 0, out[i]!);
        else if (choice < 0.25) out.splice(i, 1);
        else {
          const value = JSON.parse(out[i]!);
          if (mutateJson(value, rand, () => pick(rand, VALUES))) out[i] = JSON.stringify(value);
        }
      }
      const file = join(run.dir, `m${n}.jsonl`);
      writeFileSync(file, `${out.join('\n')}\n`);
      try {
        const record = readSession(file);
        summarize(record);
        replayable(record.effective);
        spansOf(record.header, record.events);
        readable.push(file);
      } catch (e) {
        if (e instanceof SessionFileError) {
          files.push(file);
          continue;
        }
        throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}`);
      }
    }
    // The reader is strict (a line doubled or dropped breaks the order of seq): a tenth or so still read whole.
    expect(readable.length).toBeGreaterThan(10);
    const env = { ANTHROPIC_API_KEY: 'sk-ant-fuzz-0000000000', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' };
    for (const file of [...readable.slice(0, 6), ...files.slice(0, 1)]) {
      const name = file.slice(run.dir.length + 1);
      for (const args of [
        ['show', name],
        ['trace', '--format', 'json', name],
        ['resume', name],
        ['run', 'workflow.yml', '--replay', name],
      ]) {
        const r = await conclave(args, { cwd: run.dir, env });
        expect([0, 1, 2, 3, 4], `${args.join(' ')}: ${r.stderr}`).toContain(r.code);
        expect(`${r.stdout}${r.stderr}`, `conclave ${args.join(' ')} (seed ${SEED})`).not.toMatch(/\n\s+at .*:\d+:\d+|internal error|RangeError/);
      }
    }
  }, 120_000);
});
