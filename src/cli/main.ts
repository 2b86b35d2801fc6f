import { Command, CommanderError, Option } from 'commander';
import pkg from '../../package.json' with { type: 'json' };
import { EXIT } from '../exit-codes.js';
import { guardStreams, writeCommand } from './command-guard.js';
import { errorAnnotation, inGitHubActions } from './github/github.js';
import { ConclaveError, UsageError } from '../conclave-error.js';
import { maskStreams } from './masked-streams.js';
import { processSecrets } from './process-secrets.js';
import { Masker } from '../session/masker.js';
import { viewCommands } from './views/view-commands.js';

// Commands import their modules when they run, so that `--help` and `validate` start fast.

// A reader that went away (`conclave run … | head -2`) must not stop the team: what is written
// after that is dropped, and the run goes on to its end, its session closed (no unhandled EPIPE).
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });

// Nothing of the command line (a secret -i, a cache URL's password) stays in /proc/PID/cmdline.
process.title = 'conclave';
// In Actions, no line of model text may become a workflow command (docs/security.md).
if (inGitHubActions()) guardStreams();
// The key and the process's secret-looking variables are masked in every line from the start,
// before any file is read: an error that quotes a file must not print them (docs/security.md).
maskStreams(new Masker(processSecrets()));

const program = new Command('conclave')
  .description('Run declarative multi-agent Claude workflows in CI.')
  .version(pkg.version, '-V, --version', 'print the version')
  .helpOption('-h, --help', 'show help')
  .showSuggestionAfterError()
  .exitOverride()
  .configureOutput({ outputError: (text, write) => write(betterSuggestion(text.replace(/^error:/, 'conclave:'))) });

/**
 * commander suggests by spelling distance alone, so `--budget` got "Did you mean --quiet?". An
 * option the unknown one begins (`--budget` → `--budget-usd`) is what was meant.
 */
function betterSuggestion(text: string): string {
  const unknown = /unknown option '(--[^'=]+)'/.exec(text)?.[1];
  if (!unknown) return text;
  const command = program.commands.find((c) => process.argv.slice(2).includes(c.name())) ?? program;
  const longer = command.options.map((o) => o.long).filter((long): long is string => typeof long === 'string' && long.startsWith(`${unknown}-`));
  if (longer.length === 0) return text;
  const hint = `(Did you mean ${longer.join(' or ')}?)`;
  return /\(Did you mean [^)]*\)/.test(text) ? text.replace(/\(Did you mean [^)]*\)/, hint) : `${text.trimEnd()}\n${hint}\n`;
}

/**
 * Each command's definition, in the order help lists them. A process that names its command
 * defines only that one: the others' options cost ~3 ms of every start (docs/BENCHMARKS.md).
 * Help, the version, or a name commander must find a suggestion for gets them all.
 */
const COMMANDS: Record<string, () => unknown> = {
  validate: () =>
    program
      .command('validate')
      .description('check workflow files without calling any model; exit 2 when any has errors')
      .argument('<files...>', 'workflow files')
      .option('--json', 'print the diagnostics as JSON')
      .option('--connect', 'also start the MCP servers and check the tools agents name (no model is called)')
      .option(
        '-i, --input <key=value>',
        "with --connect: an input the servers' env or headers need (repeatable)",
        (value: string, all: string[]) => [...all, value],
        [] as string[],
      )
      .option('--provider <provider>', 'check the workflow as run with --provider: anthropic, bedrock, vertex or foundry')
      .action(async (files: string[], options: { json?: boolean; connect?: boolean; input?: string[]; provider?: string }) => {
        const { validateCommand } = await import('./validate.js');
        process.exitCode = await validateCommand(files, options);
      }),
  run: () =>
    withRunOptions(
      program
        .command('run')
        .description('run a workflow: its setup steps, then the agents, until the lead completes, the team is idle or a limit is reached')
        .argument('<file>', 'workflow file')
        .option('-i, --input <key=value>', 'an input value (repeatable)', (value: string, all: string[]) => [...all, value], [] as string[])
        .option('--session <path>', 'where to write the session file (default .conclave/sessions/RUN-ID.jsonl)')
        .option('--replay <session>', 'answer every model call from a recorded session, with no network; fail at the first request that differs')
        .option('--offline', 'call no model: answer only from --response-cache or --replay, and fail on a miss'),
    ).action(async (file: string, options: import('./run-workflow.js').RunCommandOptions) => {
      const { runCommand } = await import('./run-workflow.js');
      process.exitCode = await runCommand(file, options);
    }),
  resume: () =>
    withRunOptions(
      program
        .command('resume')
        .description('continue a run from its session file: nothing recorded is paid for or done again')
        .argument('<session>', 'the session file (.conclave/sessions/RUN-ID.jsonl)')
        .option(
          '-i, --input <key=value>',
          'a secret input, which the session file does not keep (repeatable)',
          (value: string, all: string[]) => [...all, value],
          [] as string[],
        )
        .option('--workflow <file>', 'the workflow file, instead of the path the session names (which must be a .yml file below the current directory)')
        .option('--allow-changed-workflow', 'continue even though the workflow file changed since the run was recorded')
        .option('--at <seq>', 'fork: continue from event SEQ of the session, into a new file (with --out)')
        .option('--out <file>', 'the new session file of a fork')
        .option('--offline', 'call no model: answer what the session did not record only from --response-cache, and fail on a miss')
        .option('--vote <proposal=option>', "a person's vote on a proposal that waits for people, checked with GitHub (with --voter and --digest)")
        .option('--voter <login>', 'with --vote: the GitHub login of the person who votes')
        .option('--digest <hex>', "with --vote: the 12 hex characters that end the ballot's command")
        .option('--reason <text>', 'with --vote: why')
        .option('--from-comment', 'record the vote in the comment or review that started this job (GITHUB_EVENT_PATH)'),
    ).action(async (file: string, options: import('./resume.js').ResumeOptions) => {
      const { resumeCommand } = await import('./resume.js');
      process.exitCode = await resumeCommand(file, options);
    }),
  estimate: () =>
    program
      .command('estimate')
      .description('what a run of a workflow will cost, before it runs: the worst case its limits allow and the likely cost (no model call that costs money)')
      .argument('<file>', 'workflow file')
      .option('-i, --input <key=value>', 'an input value (repeatable)', (value: string, all: string[]) => [...all, value], [] as string[])
      .option('--no-setup', 'skip the setup steps: a for_each over their output is shown per item')
      .option('--from <sessions...>', 'earlier sessions of the workflow: the likely turns are the median of theirs')
      .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'markdown']).default('text'))
      .option('--json', 'the same as --format json')
      .option('--model <model>', 'as run --model: this model for every agent')
      .option('--batch', 'as run --batch: every call at the batch price')
      .option('--provider <provider>', 'as run --provider: anthropic, bedrock, vertex or foundry')
      .option('--workspace <dir>', 'the directory setup steps run in (default: the current one)')
      .action(async (file: string, options: import('./estimate/estimate-command.js').EstimateOptions) => {
        const { estimateCommand } = await import('./estimate/estimate-command.js');
        process.exitCode = await estimateCommand(file, { ...options, from: options.from ?? [] });
      }),
  worker: () =>
    program
      .command('worker')
      .description('take turns of runs started with --workers URL: their model calls and workspace tools run here (docs/workers.md)')
      .argument('<redis-url>', 'the Redis the coordinator was given, such as redis://host:6379')
      .option('--queue <name>', 'the queue of the run to serve, as its --queue (default: run-RUN_ID-ATTEMPT in GitHub Actions, else conclave)')
      .option('--concurrency <n>', 'how many turns at once', '1')
      .option('--workspace <dir>', 'the checkout the tools run in (default: the current directory)')
      .option('--idle-timeout <duration>', 'stop after this long with no turn', '10m')
      .option('--rate-limit <limits>', "pace this worker's calls under these API rate limits per minute, such as rpm=50,itpm=30000,otpm=8000")
      .option('--coordinate <url>', 'a redis:// or postgres:// server every runner shares: the rate limits are kept there (docs/organisation.md)')
      .action(async (url: string, options: import('./workers/worker-command.js').WorkerCommandOptions) => {
        const { workerCommand } = await import('./workers/worker-command.js');
        process.exitCode = await workerCommand(url, options);
      }),
  trace: () =>
    program
      .command('trace')
      .description("export a session's OpenTelemetry spans: to an OTLP/HTTP collector, or printed as OTLP/JSON")
      .argument('<session>', 'the session file')
      .option('--otlp <url>', 'the collector, such as http://localhost:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT)')
      .addOption(new Option('--format <format>', 'print the spans instead of sending them').choices(['json']))
      .option('--trace-content', 'include prompts, completions and tool input and output (masked)')
      .action(async (file: string, options: import('./traces/trace-command.js').TraceOptions) => {
        const { traceCommand } = await import('./traces/trace-command.js');
        process.exitCode = await traceCommand(file, options);
      }),
  ...viewCommands(program),
  experiment: () =>
    program
      .command('experiment')
      .description(
        'is the team better or worse for an edit? run the test cases on two versions and give a verdict: ' +
          'exit 1 for REJECT, 3 when the estimate is over --max-estimate-usd',
      )
      .argument('[tests...]', 'test files, or folders to search for *.test.yml (default: the current folder)')
      .option('--base <ref>', "the git revision to compare with, such as the pull request's base")
      .option('--head <ref>', 'the git revision to test (default: the working tree)')
      .option('--repeat <k>', 'runs of each case per version per stage (default 5)')
      .option('--max-estimate-usd <usd>', 'do not start when the likely cost of both stages is over this (exit 3)')
      .option('--min-effect <points>', 'the smallest change in pass rate, in points, worth a verdict (default 10)')
      .option('--primary <grader>', "decide on the cases' bounds of this grader instead of all their expectations")
      .option('--concurrency <n>', 'runs at once (default 8)')
      .option('--no-batch', 'call the API one request at a time instead of in message batches (full price)')
      .option('-o, --output <dir>', 'the folder for the sessions and experiment.json (default .conclave/experiments/ID)')
      .option('--park', 'runs park while their message batches are processed: exit 75, and go on later with --resume DIR')
      .option('--resume <dir>', 'go on with an experiment that parked or was stopped')
      .option('--recompute <dir>', "the verdict again from an experiment's sessions alone, with no request")
      .option('--json', 'print the result as one JSON object')
      .action(async (tests: string[], options: import('./experiment/experiment-command.js').ExperimentOptions) => {
        const { experimentCommand } = await import('./experiment/experiment-command.js');
        process.exitCode = await experimentCommand(tests, options);
      }),
  test: () =>
    program
      .command('test')
      .description('run the cases of workflow test files (*.test.yml) from their recordings, offline; exit 1 when a case fails, 2 when a file is invalid')
      .argument('[paths...]', 'test files, or folders to search for *.test.yml (default: the current folder)')
      .option('--live', 'run the cases against the API instead of their recordings (this pays)')
      .option('--repeat <k>', 'with --live: run each case K times and report its passes out of K')
      .option('--min-pass-rate <rate>', 'the share of runs of a case that must pass, from 0 to 1 (default 1)')
      .option('--update', "with --live: keep the first passing run as the case's recording")
      .option('--junit <file>', 'also write the results as JUnit XML')
      .option('--json', 'print the results as one JSON object')
      .option('--case <name>', 'run only the cases of this name (* stands for any text)')
      .option('--bail', 'stop at the first case that fails')
      .action(async (paths: string[], options: import('./test/test-command.js').TestOptions) => {
        const { testCommand } = await import('./test/test-command.js');
        process.exitCode = await testCommand(paths, options);
      }),
};
const named = process.argv[2];
for (const [name, define] of Object.entries(COMMANDS)) {
  if (named === undefined || !Object.hasOwn(COMMANDS, named) || named === name) define();
}

/** The options `run` and `resume` share. */
function withRunOptions(command: Command): Command {
  return (
    command
      .option('--model <model>', 'use this model for every agent')
      .option('--batch', "send every agent's calls through the Message Batches API at half the price, as batch: true does (docs/batches.md)")
      .option('--provider <provider>', 'reach Claude through this provider for every agent: anthropic, bedrock, vertex or foundry (docs/providers.md)')
      .option('--workspace <dir>', 'the directory setup steps and workspace tools run in (default: the current one)')
      .option(
        '--response-cache [store]',
        'keep model responses across runs: an SQLite file (default .conclave/cache.sqlite), or a redis:// or postgres:// URL (not the prompt cache)',
      )
      .option('--response-cache-ttl <duration>', 'how long the response cache keeps a response, such as 12h or 7d (default: for good)')
      // The old names, kept: "cache" also names the workflow's prompt cache (`cache: { ttl }`).
      .addOption(new Option('--cache [store]').hideHelp())
      .addOption(new Option('--cache-ttl <duration>').hideHelp())
      .option('--budget-usd <usd>', 'set limits.budget_usd (on resume: raise the recorded one)')
      .option('--max-estimate-usd <usd>', 'do not start when the likely cost (conclave estimate) is over this (on resume: raise the recorded one)')
      .option('--max-turns <n>', 'set limits.max_turns (on resume: raise the recorded one)')
      .option('--max-turns-per-agent <n>', 'set limits.max_turns_per_agent (on resume: raise the recorded one)')
      .option('--max-tokens-total <n>', 'set limits.max_tokens_total (on resume: raise the recorded one)')
      .option('--timeout <duration>', 'set limits.timeout, such as 90s, 15m, 1h (on resume: from the time already used)')
      .option(
        '--rate-limit <limits>',
        'pace calls under these API rate limits per minute, such as rpm=50,itpm=30000,otpm=8000 (others are learned from the API)',
      )
      .option('--coordinate <url>', 'a redis:// or postgres:// server every runner of the organisation shares: rate limits and spend pools are kept there')
      .option(
        '--spend-pool <pool>',
        'a ceiling across runs, kept in --coordinate, such as org=200/day (repeatable)',
        (value: string, all: string[]) => [...all, value],
        [] as string[],
      )
      .option(
        '--workers <redis-url>',
        "run each turn's model calls and workspace tools on `conclave worker` processes that take them from this Redis (docs/workers.md)",
      )
      .option('--queue <name>', 'with --workers: the queue, one per run (default: run-RUN_ID-ATTEMPT in GitHub Actions, else conclave)')
      .option('--sarif <file>', "write the agents' findings (the annotate tool) as SARIF 2.1.0, for code scanning")
      .option('--park', 'when nothing can go on until a message batch ends (batch: true) or people vote, write the session and exit 75; resume it later')
      .option('--trace-content', 'with OTEL_EXPORTER_OTLP_ENDPOINT: include prompts, completions and tool input and output in the spans (masked)')
      .option('--json', 'print one JSON object with the result at the end')
      .option('--quiet', 'print only the result')
      .hook('preAction', (action) => {
        for (const [old, now, flag] of [
          ['cache', 'responseCache', 'cache'],
          ['cacheTtl', 'responseCacheTtl', 'cache-ttl'],
        ] as const) {
          const options = action.opts();
          if (options[old] === undefined) action.setOptionValue(old, options[now]);
          else if (options[now] === undefined) process.stderr.write(`conclave: --${flag} is now --response-${flag}; the old name still works\n`);
          else throw new UsageError(`give --response-${flag} or its old name, not both`);
        }
      })
  );
}

try {
  await program.parseAsync();
} catch (e) {
  if (e instanceof CommanderError) {
    process.exitCode = e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else if (ConclaveError.is(e)) {
    // One of ours (a user's mistake, most often): its message in one line, its own exit code.
    process.stderr.write(`conclave: ${e.message}\n`);
    if (inGitHubActions()) writeCommand(process.stdout, errorAnnotation(e.message));
    process.exitCode = e.exitCode;
  } else {
    process.stderr.write(`conclave: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = EXIT.failure;
  }
}

// The command is done, its session closed: end now, once the output is written. A store's driver
// that leaves a socket or a timer behind (pg after a failed login, redis's connect timer) must
// not hold the process, or a CI job, for another minute.
process.stdout.write('', () => process.stderr.write('', () => process.exit()));
