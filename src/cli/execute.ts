import { resultJson } from './output/result-json.js';
import type { HumanVote } from '../engine/people-votes.js';
import type { Connection } from '../provider/connect.js';
import type { RunProviders } from './providers.js';
import { runEnvironment } from './run-environment.js';
import { Run } from '../engine/run.js';
import type { RunResult } from '../engine/run-options.js';
import { CacheError, maskedCache, openCache, type ResponseCache } from '../session/cache.js';
import type { SessionEvent } from '../session/format.js';
import type { SessionWriter } from '../session/writer.js';
import { durationMs, type Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import { typedOutputs } from '../workflow/typed-outputs.js';
import type { Scalar } from '../workflow/types.js';
import { addMask, inGitHubActions } from './github/github.js';
import { printableJson, writeCommand } from './command-guard.js';
import { printable } from './output/terminal-text.js';
import type { LimitFlags } from './limit-flags.js';
import type { Organisation, OrganisationFlags } from './organisation.js';
import { resultText } from './output/result-text.js';
import { UsageError } from './usage-error.js';
import { writeUnmasked } from './masked-streams.js';
import type { Masker } from '../session/masker.js';
import type { WorkersFlags } from './workers/worker-pool.js';
import type { TurnsElsewhere } from '../engine/run-options.js';
import { noteGeneration } from './run-generations.js';
import { warning } from './warning.js';

export interface OutputOptions extends LimitFlags, OrganisationFlags, WorkersFlags {
  json?: boolean;
  quiet?: boolean;
  /** --cache: true for the default SQLite file, or a file or URL. */
  cache?: string | true;
  /** --cache-ttl: how long an entry is kept. */
  cacheTtl?: string;
  /** --offline: answer only from the cache or a replay. */
  offline?: boolean;
  /** --sarif: where to write the findings as SARIF. */
  sarif?: string;
  /** --park: exit 75 (waiting) when nothing can go on until a message batch ends. */
  park?: boolean;
}

/** Opens --cache before anything is written; a UsageError when it cannot be opened. */
export async function cacheOf(options: OutputOptions & { replay?: string }): Promise<ResponseCache | undefined> {
  if (options.offline && options.cache === undefined && !options.replay)
    throw new UsageError('--offline answers only from --response-cache or --replay: give one of them');
  if (options.cacheTtl !== undefined && options.cache === undefined)
    throw new UsageError('--response-cache-ttl is for entries of --response-cache: give --response-cache too');
  if (options.cache === undefined) return undefined;
  const ttlMs = options.cacheTtl === undefined ? undefined : cacheTtlMs(options.cacheTtl);
  try {
    return await openCache(options.cache, { ttlMs, onFailure: warning, onMalformed: warning });
  } catch (e) {
    if (e instanceof CacheError) throw new UsageError(e.message);
    throw new UsageError(`cannot open the response cache: ${(e as Error).message}`);
  }
}

function cacheTtlMs(value: string): number {
  const days = /^\s*(\d+)d\s*$/.exec(value);
  let ms = Number.NaN;
  try {
    ms = days ? Number(days[1]) * 86_400_000 : durationMs(value.trim());
  } catch {
    // refused below
  }
  if (!(ms >= 1000)) throw new UsageError(`--response-cache-ttl must be a duration of at least 1s, such as 12h or 7d; got ${JSON.stringify(value)}`);
  return ms;
}

export interface ExecuteOptions extends Omit<OutputOptions, 'cache'> {
  workflow: Workflow;
  /** The limits the run starts with (a resume: those its recording started with). */
  limits: Limits;
  /** A resume's limits from where its recording ends. */
  limitsOnLive?: Limits;
  inputs: Record<string, Scalar>;
  runId: string;
  /** The session path the run's expressions see (`run.session`): the original one, when resumed. */
  scopeSession: string;
  writer: SessionWriter;
  /** What to re-execute first: a resumed, forked or replayed session's events. */
  recording?: readonly SessionEvent[];
  /** --replay's file: the new session holds only what the replay added, the rest is there. */
  replayOf?: string;
  /** Called when the recording is used up, before the first new event. */
  onLive?: () => void;
  /** The run's generation once it stops (run-generations.ts): 1, and one more per resume that went live. */
  generation?: () => number;
  /** The providers' clients: undefined for --replay and --offline, which make no model call. */
  connections?: readonly Connection[];
  /** The providers the run reaches, --provider checked (providers.ts). */
  providers: RunProviders;
  /** --trace-content: prompts and completions in the live spans. */
  traceContent?: boolean;
  /** Values to hide from the logs (in GitHub Actions: ::add-mask::). */
  secrets?: readonly string[];
  /** Masks them in everything this run prints and writes. */
  masker: Masker;
  responseCache?: ResponseCache;
  elapsedBeforeMs?: number;
  /** Pacing under the API's rate limits, and the spend pools: for a run that calls the API. */
  organisation?: Organisation;
  model?: string;
  /** --batch: every agent's calls through the Message Batches API. */
  batch?: boolean;
  workspace: string;
  /** --workers: where the turns run, and its close. */
  pool?: TurnsElsewhere & { close(): Promise<void> };
  /** resume --vote or --from-comment: people's votes, checked with GitHub (vote-checks.ts). */
  votes?: readonly HumanVote[];
}

/** Runs (or continues) a workflow, prints the result and returns the exit code. */
export async function executeRun(options: ExecuteOptions): Promise<number> {
  const { workflow, writer } = options;
  const github = inGitHubActions();
  // Workflow commands go to stdout, but for --json, whose stdout is one JSON object.
  const command = (text: string) => writeCommand(options.json ? process.stderr : process.stdout, text);
  if (github) for (const secret of options.secrets ?? []) writeUnmasked(() => command(addMask(secret)));
  const warnOnce = repeatedWarningsOnce();
  const environment = await runEnvironment(options, github);
  const { provider, journal, view, trace } = environment;
  const run = new Run({
    workflow,
    inputs: options.inputs,
    identity: {
      runId: options.runId,
      sessionPath: options.scopeSession,
      ownFiles: [writer.path, ...(options.responseCache?.file ? [options.responseCache.file] : [])],
      credentials: environment.credentials,
      providers: options.providers.used,
    },
    place: { workspace: options.workspace, env: process.env, ...(options.pool ? { elsewhere: options.pool } : {}) },
    answers: {
      call: (request, signal, listeners, to) => {
        if (!provider) throw new Error('no model can be called in a replay');
        return provider.call(request, signal, listeners, to);
      },
      modelOverride: options.model,
      ...(options.batch ? { batchOverride: true } : {}),
      providerOverride: options.providers.override,
      cache: options.responseCache && maskedCache(options.responseCache, (value) => options.masker.value(value)),
      live: provider !== undefined || options.pool !== undefined,
      pools: provider || options.pool ? options.organisation?.pools : undefined,
      batches: provider?.batchApi(),
      // A count that fails leaves the estimate to the prompt's length: the run's own calls will meet a real outage.
      ...(provider ? { count: (request, to, signal) => provider.countTokens(request, to, signal).catch(() => undefined) } : {}),
    },
    // The job summary opens with the estimate (docs/pricing.md: before a run).
    estimateFirst: github,
    recording: {
      journal,
      limits: options.limits,
      limitsOnLive: options.limitsOnLive,
      onLive: options.onLive,
      elapsedBeforeMs: options.elapsedBeforeMs,
      mask: (text) => options.masker.text(text),
    },
    servers: { start: options.replayOf === undefined, mask: (text) => options.masker.loose(text) },
    replay: options.replayOf !== undefined,
    park: options.park === true,
    people: { votes: options.votes ?? [], head: writer.header.github?.head, run: writer.header.run_id },
    // As the run began: a resume is not steered by a later edit of the event's text.
    ...(writer.header.trust ? { trust: writer.header.trust } : {}),
    ...(writer.header.event ? { event: writer.header.event } : {}),
    progress: environment.progress,
  });
  const onInt = () => run.interrupt('SIGINT');
  const onTerm = () => run.interrupt('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let result: RunResult;
  try {
    // Outputs, the summary and the reason may quote a secret the model saw: mask them once, here.
    result = options.masker.value(await run.start());
  } finally {
    await view?.finish();
    await options.pool?.close();
    await trace?.end();
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    try {
      writer.close();
    } catch {
      // a full disk: the run's result already says so
    }
    await options.responseCache?.close();
    // A replay is a run of its own; any other run notes its newest generation, against stale copies (run-generations.ts):
    // beside the sessions, and in the --coordinate store, where every runner sees it.
    const noted =
      result! && !options.replayOf && options.generation ? { generation: options.generation(), status: result.status, session: writer.path } : undefined;
    if (noted) await options.organisation?.noteRun(writer.header.run_id, noted);
    await options.organisation?.close();
    if (noted) noteGeneration(process.cwd(), writer.header.run_id, noted);
  }
  if (options.sarif || github) {
    const summary = (await import('./graded-summary.js')).gradedSummaryOf(writer.path, options.replayOf);
    if (options.sarif) (await import('./github/sarif.js')).writeSarif(options.sarif, summary.findings, options.workspace);
    // Loaded only in Actions: @actions/core brings an HTTP client with it.
    if (github)
      (await import('./github/github-report.js')).reportToGitHub(
        result,
        summary,
        writer.path,
        options.workspace,
        { command, text: (text) => (options.json ? process.stderr : process.stdout).write(text) },
        Object.entries(typedOutputs(workflow.spec))
          .filter(([, d]) => d.type !== 'string')
          .map(([name]) => name),
      );
  }
  process.stdout.write(options.json ? `${printableJson(resultJson(result, writer.path))}\n` : resultText(result, writer.path, options.replayOf));
  // --json keeps stdout for the result; a run stopped by an error says why on stderr too, where a CI log shows it.
  if (options.json && result.status === 'error') process.stderr.write(`conclave: ${printable(result.reason)}\n`);
  warnOnce();
  environment.unmask();
  return result.exitCode;
}

/**
 * The SDK warns on every call of a deprecated model: dozens of identical lines in a CI log. Each
 * distinct warning is shown once per run. Returns the undo.
 */
function repeatedWarningsOnce(): () => void {
  const warn = console.warn;
  const seen = new Set<string>();
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(' ');
    if (seen.has(text)) return;
    seen.add(text);
    warn(...args);
  };
  return () => (console.warn = warn);
}
