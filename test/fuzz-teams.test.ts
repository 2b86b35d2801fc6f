import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mutateJson, mutateText, random } from './helpers/random.js';
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic/server.js';
import { conclave } from './helpers/cli.js';
import { runWorkflow } from './helpers/run-workflow.js';
import { graphJson } from '../src/cli/views/graph-command.js';
import { readSession, SessionFileError } from '../src/session/reader.js';
import { isFinished, replayable } from '../src/session/recording.js';
import { summarize } from '../src/session/summary.js';
import { spansOf } from '../src/trace/spans.js';
import { loadWorkflow, WorkflowFileError } from '../src/workflow/load.js';

/**
 * Seeded fuzzing of run-time teams (issue 38): generated workflows with templates, for_each,
 * spawns, forks, queue modes and providers, and session files with spawn chains, forks and rate
 * waits, mutated. Each case is checked in process (load and graph; read, summarise, replay and
 * trace), and a sample through the CLI (validate, graph, run --offline; show, trace, resume,
 * --replay): exit codes only, never a stack trace, never a hang. FUZZ_SEED=N repeats a run;
 * FUZZ_CLI_ALL=1 sends every case through the CLI (minutes: docs/testing.md has its figures).
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 1_000;
const CLI_SAMPLE = process.env.FUZZ_CLI_ALL ? CASES : 10;
/** Each test's bound: every case through the CLI takes tens of minutes. */
const LONG = process.env.FUZZ_CLI_ALL ? 3_600_000 : 600_000;

const pick = <T>(rand: () => number, values: readonly T[]): T => values[Math.floor(rand() * values.length)]!;
const maybe = (rand: () => number, p = 0.5) => rand() < p;
/** Mostly a value a workflow may hold; now and then one it may not. */
const choose = <T, U>(rand: () => number, good: readonly T[], bad: readonly U[]): T | U => (maybe(rand, 0.04) ? pick(rand, bad) : pick(rand, good));

const QUEUES = [
  ['collect', 'followup', 'steer', 'interrupt'],
  ['later', 3],
] as const;
const PROVIDERS = [
  ['anthropic', 'anthropic', 'bedrock', 'vertex', 'foundry'],
  ['azure', ''],
] as const;
const NUMBERS = [
  [1, 2, 3, 64],
  [0, 1025, -1, 0.5, 1e9, '2', null],
] as const;
const BUDGETS = [
  [0.5, 1, 2.5],
  [0, -1, '1', null],
] as const;
const FOR_EACH = [
  [['a', 'b', 'c'], [], '$<< lines(setup.files) >>', '$<< from_json(setup.files) >>'],
  ['$<< setup.nope >>', 'a b', [1, [2]], { a: 1 }],
] as const;

/** A workflow of a run-time team, its pieces drawn at random, some of them wrong. */
function teamWorkflow(rand: () => number): string {
  const templates: Record<string, unknown> = {};
  const names = Array.from({ length: 1 + Math.floor(rand() * 3) }, (_, i) => choose(rand, [`t${i}`], ['lead', 'all', 't0-1', 'T!', 'lead-fork']));
  for (const name of names) {
    templates[name] = {
      ...(maybe(rand) ? { role: choose(rand, ['manager', 'worker'], ['boss']) } : {}),
      ...(maybe(rand) ? { spawns: [choose(rand, names, ['ghost'])] } : {}),
      ...(maybe(rand, 0.3) ? { fork: choose(rand, [true, false], ['yes']) } : {}),
      ...(maybe(rand)
        ? { limits: { ...(maybe(rand) ? { budget_usd: choose(rand, ...BUDGETS) } : {}), ...(maybe(rand) ? { max_turns: choose(rand, ...NUMBERS) } : {}) } }
        : {}),
      ...(maybe(rand, 0.3) ? { queue: choose(rand, ...QUEUES) } : {}),
      ...(maybe(rand, 0.2) ? { provider: choose(rand, ...PROVIDERS) } : {}),
      system: choose(rand, ['Review what you are given.', 'Check $<< workflow.name >>.'], ['$<< item >>', '$<< spawn.task >>']),
    };
  }
  const agents: Record<string, unknown> = {
    lead: {
      role: 'manager',
      ...(maybe(rand, 0.9) ? { spawns: [names[0]!, ...names.slice(1).filter(() => maybe(rand))] } : {}),
      ...(maybe(rand, 0.3) ? { fork: true } : {}),
      ...(maybe(rand, 0.3) ? { queue: choose(rand, ...QUEUES) } : {}),
    },
  };
  for (let i = 0; i < Math.floor(rand() * 3); i++) {
    const forEach = maybe(rand);
    agents[choose(rand, [`w${i}`, `per-${i}`], [`t0-${i}`])] = {
      role: choose(rand, ['worker'], ['manager']),
      ...(forEach ? { for_each: choose(rand, ...FOR_EACH) } : {}),
      ...(maybe(rand, 0.3) ? { reports_to: choose(rand, ['lead'], ['w0', 'ghost']) } : {}),
      ...(maybe(rand, 0.3) ? { queue: choose(rand, ...QUEUES) } : {}),
      ...(maybe(rand, 0.3) ? { provider: choose(rand, ...PROVIDERS) } : {}),
      system: forEach ? choose(rand, ['You own $<< item >> ($<< item_index >>).'], ['$<< item.deep.deeper >>']) : 'Plain.',
    };
  }
  const spec: Record<string, unknown> = {
    name: `team-${Math.floor(rand() * 1000)}`,
    setup: [{ id: 'files', run: pick(rand, ['printf "a.ts\\nb.ts\\n"', 'echo \'["a","b"]\'', 'true']) }],
    ...(maybe(rand) ? { defaults: { ...(maybe(rand) ? { provider: choose(rand, ...PROVIDERS) } : {}), max_tokens: 1024 } } : {}),
    ...(maybe(rand, 0.2) ? { provider: choose(rand, ...PROVIDERS) } : {}),
    ...(maybe(rand)
      ? {
          limits: {
            max_agents: 64,
            ...(maybe(rand) ? { max_depth: choose(rand, [1, 2, 3], [0, 99, -1, 'deep']) } : {}),
            ...(maybe(rand) ? { concurrency: choose(rand, ...NUMBERS) } : {}),
          },
        }
      : {}),
    ...(maybe(rand, 0.3) ? { rate_limits: { sonnet: { rpm: choose(rand, ...NUMBERS) } } } : {}),
    agents,
    templates,
    kickoff: choose(rand, ['@lead go', 'Go.', '@all'], ['Go. @t0 and @w0-1']),
  };
  let text = stringify(spec);
  if (maybe(rand, 0.3)) for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) text = mutateText(text, rand);
  return text;
}

const VALUES: unknown[] = [null, true, 0, -1, 1.5, 1e308, '', 'x', [], {}, 'lead', 'reviewer-1', 'lead-fork-1', '(fork)', 2 ** 53 + 1, 'interrupt'];

/** A session line with one place changed, a spawn's parent pointed elsewhere, or a line doubled. */
function mutateSession(lines: string[], rand: () => number): string[] {
  const out = [...lines];
  for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) {
    const i = 1 + Math.floor(rand() * (out.length - 1));
    const choice = rand();
    if (choice < 0.15) out.splice(i, 0, out[Math.floor(rand() * out.length)]!);
    else if (choice < 0.25) out.splice(i, 1);
    else {
      let value: unknown;
      try {
        value = JSON.parse(out[i]!);
      } catch {
        continue;
      }
      if (!mutateJson(value, rand, () => pick(rand, VALUES))) continue;
      out[i] = JSON.stringify(value);
    }
  }
  return out;
}

/** Runs a CLI command, failing on a hang (a generous bound) or a stack trace. */
async function cli(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<number | null> {
  const r = await Promise.race([
    conclave(args, { cwd, env: { ANTHROPIC_API_KEY: 'sk-ant-fuzz-0000000000', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ...env } }),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`hung: conclave ${args.join(' ')} in ${cwd}`)), 30_000)),
  ]);
  const said = `${r.stdout}${r.stderr}`;
  expect(said, `conclave ${args.join(' ')} in ${cwd} (seed ${SEED})`).not.toMatch(/\n\s+at .*:\d+:\d+|internal error|RangeError/);
  return r.code;
}

describe(`fuzzing run-time teams (seed ${SEED})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-fuzz-teams-'));
  let server: FakeAnthropic;
  const sessions: { dir: string; lines: string[] }[] = [];

  beforeAll(async () => {
    // Sessions as real runs write them: a spawn chain three deep with a fork, under a rate limit that makes calls wait.
    server = await startFakeAnthropic(
      {
        lead: (r) => (r.call === 1 ? { tools: [{ name: 'spawn', input: { template: 'boss', tasks: ['a', 'b'] } }] } : { text: 'done' }),
        'boss-1': (r) =>
          r.call === 1
            ? { tools: [{ name: 'spawn', input: { template: 'leaf', task: 'x' } }] }
            : r.call === 2
              ? { tools: [{ name: 'fork', input: { task: 'y' } }] }
              : { text: 'boss-1 done' },
        'boss-2': (r) =>
          r.call === 1 ? { tools: [{ name: 'spawn', input: { template: 'leaf', tasks: ['p', 'q'], name: undefined } }] } : { text: 'boss-2 done' },
        'leaf-1': () => ({ text: 'leaf 1' }),
        'leaf-2': () => ({ text: 'leaf 2' }),
        'leaf-3': () => ({ text: 'leaf 3' }),
      },
      { rateLimits: { requests: { limit: 6, windowMs: 1_000 } } },
    );
    const workflow =
      'name: chain\ndefaults: { max_tokens: 1024 }\nagents:\n  lead: { role: manager, spawns: [boss] }\ntemplates:\n  boss: { role: manager, spawns: [leaf], fork: true, queue: steer }\n  leaf: { queue: interrupt }\nkickoff: Go.\n';
    const run = await runWorkflow(server, workflow);
    expect(run.events.some((e) => e.type === 'agent_spawned')).toBe(true);
    sessions.push({
      dir: run.dir,
      lines: readFileSync(join(run.dir, String(run.json.session)), 'utf8')
        .trimEnd()
        .split('\n'),
    });
  }, 60_000);
  afterAll(() => server?.close());

  it(
    `${CASES} generated workflows of run-time teams load to diagnostics or a graph, never an exception; a sample through validate, graph and run --offline`,
    async () => {
      const rand = random(SEED);
      const files: string[] = [];
      let runnable = 0;
      for (let n = 0; n < CASES; n++) {
        const text = teamWorkflow(rand);
        const file = join(dir, `w${n}.yml`);
        writeFileSync(file, text);
        files.push(file);
        try {
          const { workflow, diagnostics } = await loadWorkflow(file);
          for (const d of diagnostics) expect(d.line, `case ${n} (seed ${SEED})`).toBeGreaterThan(0);
          if (workflow && !diagnostics.some((d) => d.severity === 'error')) {
            graphJson(workflow);
            runnable++;
          }
        } catch (e) {
          if (e instanceof WorkflowFileError) continue;
          throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}\n--- the file:\n${text.slice(0, 2000)}`);
        }
      }
      // Not all refused at the first key: enough of them load whole for the graph and the run to be reached.
      expect(runnable, 'workflows that load without an error').toBeGreaterThan(CASES / 5);
      process.stdout.write(`fuzz-teams: ${runnable} of ${CASES} generated workflows load without an error\n`);
      for (const file of files.slice(0, CLI_SAMPLE)) {
        const name = file.slice(dir.length + 1);
        expect([0, 2], name).toContain(await cli(['validate', name], dir));
        expect([0, 2], name).toContain(await cli(['graph', name], dir));
        expect([0, 1, 2, 3], name).toContain(await cli(['run', name, '--offline', '--session', `${name}.jsonl`, '--timeout', '20s'], dir));
      }
    },
    LONG,
  );

  it(
    `${CASES} mutated sessions of spawn chains, forks and rate waits: read, summarised, replayed and traced, or refused with their line; a sample through show, trace, resume and --replay`,
    async () => {
      const rand = random(SEED + 1);
      const base = sessions[0]!;
      const types = new Set(base.lines.slice(1).map((l) => (JSON.parse(l) as { type: string }).type));
      for (const type of ['agent_spawned', 'rate_waited', 'agent_ended']) expect(types, `the base session holds ${type}`).toContain(type);
      expect(
        base.lines.some((l) => l.includes('"template":"(fork)"')),
        'the base session holds a fork',
      ).toBe(true);
      const files: string[] = [];
      let read = 0;
      for (let n = 0; n < CASES; n++) {
        const lines = mutateSession(base.lines, rand);
        const file = join(base.dir, `m${n}.jsonl`);
        writeFileSync(file, `${lines.join('\n')}\n`);
        files.push(file);
        try {
          const record = readSession(file);
          summarize(record);
          replayable(record.effective);
          isFinished(record);
          spansOf(record.header, record.events);
          read++;
        } catch (e) {
          if (e instanceof SessionFileError) {
            expect(e.message, `case ${n} of seed ${SEED}`).toContain(file);
            continue;
          }
          throw new Error(`case ${n} of seed ${SEED} threw ${(e as Error).stack}\n--- the file:\n${lines.join('\n').slice(0, 3000)}`);
        }
      }
      expect(read, 'mutated sessions that still read').toBeGreaterThan(CASES / 10);
      process.stdout.write(`fuzz-teams: ${read} of ${CASES} mutated sessions read whole\n`);
      const env = { ANTHROPIC_BASE_URL: server.url };
      for (const file of files.slice(0, CLI_SAMPLE)) {
        const name = file.slice(base.dir.length + 1);
        for (const args of [
          ['show', name],
          ['show', '--format', 'markdown', name],
          ['trace', '--format', 'json', name],
          ['resume', name, '--offline'],
          ['run', 'workflow.yml', '--replay', name, '--session', `${name}.replayed.jsonl`],
        ]) {
          // A case that fails carries its session, so that it can be run again (the base session is a live run's).
          const code = await cli(args, base.dir, env).catch((e: Error) => {
            throw new Error(`${e.message}\n--- the session:\n${readFileSync(file, 'utf8').slice(0, 20_000)}`);
          });
          expect([0, 1, 2, 3, 4], `${args.join(' ')}`).toContain(code);
        }
      }
    },
    LONG,
  );
});
