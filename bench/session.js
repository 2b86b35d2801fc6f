// The session file's costs, with the real engine in-process (no HTTP, so only conclave is measured):
// 1. resuming a session of 100,000 events up to the first new model call, against merely reading
//    and JSON-parsing the same file;
// 2. writing the session during the fan-out run (a lead and 8 workers, 1,000 ms per call),
//    against that run's wall time.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSource } from './load-source.js';

const { Journal, Run, readSession, replayable, SessionWriter, loadWorkflow, Masker } = await loadSource('bench/session-entry.ts');
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function workflowFile(dir, text) {
  const file = join(dir, 'workflow.yml');
  writeFileSync(file, text);
  const { workflow, diagnostics } = await loadWorkflow(file);
  if (!workflow) throw new Error(diagnostics.map((d) => d.message).join('; '));
  return workflow;
}

// A run always masks at least the API key: measure the writer with it.
const masker = () => new Masker(['sk-ant-bench-0123456789abcdef']);

function newWriter(path, workflow) {
  return SessionWriter.create(
    path,
    {
      type: 'header',
      format: 1,
      run_id: 'bench',
      conclave_version: '0',
      workflow: { path: workflow.file, sha256: '' },
      inputs: {},
      session: path,
      started_at: '',
    },
    masker(),
  );
}

function response(text, id) {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-5-5',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 900, output_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

function run(workflow, dir, journal, callModel) {
  return new Run({
    workflow,
    inputs: {},
    identity: { runId: 'bench', sessionPath: 'bench.jsonl' },
    place: { workspace: dir, env: {} },
    answers: { call: callModel },
    recording: { journal, limits: workflow.limits },
    progress: () => {},
  });
}

// A ring of 500 workers passing a token: every turn one model call and six events.
const RING = 500;
const ROUNDS = 34;
const ringWorkflow = `
name: ring
limits: { max_turns: ${RING * ROUNDS + 10}, max_turns_per_agent: ${ROUNDS + 2}, budget_usd: 1000000, timeout: 1h }
agents:
  lead: { role: manager }
${Array.from({ length: RING }, (_, i) => `  w${i}: { role: worker }`).join('\n')}
kickoff: "@w0 start the ring"
`;

async function recordRing(dir) {
  const workflow = await workflowFile(dir, ringWorkflow);
  const path = join(dir, 'ring.jsonl');
  const writer = newWriter(path, workflow);
  const journal = new Journal({ write: (e) => writer.append(e), sync: () => {}, lineOf: (e) => writer.lineOf(e) });
  let calls = 0;
  await run(workflow, dir, journal, async (request) => {
    calls++;
    const me = Number(/You are @w(\d+)/.exec(request.system[0].text)?.[1] ?? -1);
    const text = calls >= RING * ROUNDS ? 'done' : `@w${(me + 1) % RING} your turn, round ${Math.floor(calls / RING)}`;
    return response(text, `msg_${calls}`);
  }).start();
  writer.close();
  return { workflow, path };
}

export async function resumeCost(rounds = 3) {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-session-'));
  const { workflow, path } = process.env.RING_SESSION
    ? { workflow: await workflowFile(dir, ringWorkflow), path: process.env.RING_SESSION }
    : await recordRing(dir);
  // Cut the run before its end, as a crash would.
  const lines = readFileSync(path, 'utf8').split('\n');
  const events = lines.length - 2;
  const cut = join(dir, 'cut.jsonl');
  writeFileSync(cut, `${lines.slice(0, 100_001).join('\n')}\n`);

  const parses = [];
  const resumes = [];
  for (let i = 0; i < rounds; i++) {
    let start = now();
    readFileSync(cut, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    parses.push(now() - start);

    const copy = join(dir, `resume-${i}.jsonl`);
    writeFileSync(copy, readFileSync(cut));
    start = now();
    const record = readSession(copy);
    const recording = replayable(record.effective);
    const writer = SessionWriter.append(record, masker());
    const journal = new Journal({ write: (e) => writer.append(e), sync: () => writer.sync(), lineOf: (e) => writer.lineOf(e) }, recording);
    let reached;
    const firstLiveCall = new Promise((resolve) => (reached = resolve));
    const resumed = run(workflow, dir, journal, (_request, signal) => {
      reached(now() - start);
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
    });
    const done = resumed.start();
    resumes.push(await firstLiveCall);
    resumed.interrupt('SIGTERM');
    await done;
    writer.close();
  }
  return { events: Math.min(events, 100_000), parseMs: median(parses), resumeMs: median(resumes), ratio: median(resumes) / median(parses) };
}

export async function writeCost() {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bench-write-'));
  const workers = Array.from({ length: 8 }, (_, i) => `w${i + 1}`);
  const workflow = await workflowFile(
    dir,
    `
name: fan-out
limits: { concurrency: 8 }
agents:
  lead: { role: manager }
${workers.map((w) => `  ${w}: { role: worker }`).join('\n')}
kickoff: Check the eight modules.
`,
  );
  const writer = newWriter(join(dir, 'fan-out.jsonl'), workflow);
  let writing = 0;
  const timed =
    (f) =>
    (...args) => {
      const start = now();
      try {
        return f(...args);
      } finally {
        writing += now() - start;
      }
    };
  const journal = new Journal({ write: timed((e) => writer.append(e)), sync: timed(() => writer.sync()), lineOf: (e) => writer.lineOf(e) });
  let n = 0;
  const start = now();
  await run(workflow, dir, journal, (request) => {
    const lead = request.system[0].text.startsWith('You are @lead');
    const first = lead && !JSON.stringify(request.messages).includes('from @w');
    const answer = !lead
      ? response('no findings', `msg_${++n}`)
      : first
        ? response(`${workers.map((w) => `@${w}`).join(' ')} check your module.`, `msg_${++n}`)
        : {
            ...response('', `msg_${++n}`),
            content: [{ type: 'tool_use', id: `toolu_${n}`, name: 'complete', input: { status: 'success', summary: 'ok' } }],
            stop_reason: 'tool_use',
          };
    return new Promise((resolve) => setTimeout(() => resolve(answer), 1000));
  }).start();
  const wall = now() - start;
  writer.close();
  return { wallMs: wall, writeMs: writing, share: writing / wall };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'record') console.log((await recordRing(mkdtempSync(join(tmpdir(), 'conclave-ring-')))).path);
  else if (process.argv[2] !== 'write') console.log(await resumeCost(Number(process.env.ROUNDS ?? 3)));
  if (process.argv[2] === undefined || process.argv[2] === 'write') console.log(await writeCost());
}
