import { credentialPaths } from '../provider/credential-names.js';
import { Journal } from '../engine/replay/journal.js';
import type { ProgressListener } from '../engine/progress-events.js';
import { CALL_RETRIES, Provider, REQUEST_TIMEOUT_MS } from '../provider/client.js';
import type { Connection } from '../provider/connect.js';
import type { SessionEvent } from '../session/format.js';
import type { Masker } from '../session/masker.js';
import type { SessionWriter } from '../session/writer.js';
import type { Limits } from '../workflow/limits.js';
import type { Workflow } from '../workflow/load.js';
import type { Organisation } from './organisation.js';
import type { RunProviders } from './providers.js';
import { maskStreams } from './masked-streams.js';
import type { LiveView } from './output/live-view.js';
import { progressLines } from './output/progress-lines.js';
import { liveTrace, type LiveTrace } from './traces/live-trace.js';
import { warning } from './warning.js';

/**
 * What a run executes in, prepared before it starts (docs/ARCHITECTURE.md: a run's environment):
 * every write masked, the live trace, the live view or plain progress lines, the credential files
 * its tools must not read, the providers' client, and the journal the session file and the trace
 * are written through. executeRun hands it whole to the run and closes it when the run ends.
 */
export interface RunEnvironment {
  /** Undoes the masking of stdout and stderr. */
  unmask(): void;
  trace: LiveTrace | undefined;
  view: LiveView | undefined;
  progress: ProgressListener;
  /** The providers' credential files, hidden from run_command's sandbox. */
  credentials: ReturnType<typeof credentialPaths>;
  /** Undefined for --replay and --offline, which make no model call. */
  provider: Provider | undefined;
  journal: Journal;
}

/** What the environment is made from: the run's writer and masker, its recording, its providers, and how it shows progress. */
export interface EnvironmentOptions {
  workflow: Workflow;
  writer: SessionWriter;
  masker: Masker;
  recording?: readonly SessionEvent[];
  replayOf?: string;
  /** --trace-content: prompts and completions in the live spans. */
  traceContent?: boolean;
  quiet?: boolean;
  json?: boolean;
  limits: Limits;
  limitsOnLive?: Limits;
  providers: RunProviders;
  connections?: readonly Connection[];
  offline?: boolean;
  organisation?: Organisation;
}

/** The narrowest terminal the live view is drawn in. */
const MIN_LIVE_COLUMNS = 40;

export async function runEnvironment(options: EnvironmentOptions, github: boolean): Promise<RunEnvironment> {
  const { writer, masker } = options;
  // From here on (after the ::add-mask:: lines, which must name the secrets), every write is masked.
  const unmask = maskStreams(masker);
  const trace = await liveTrace({
    env: process.env,
    header: writer.header,
    recorded: options.replayOf ? [] : (options.recording ?? []),
    mask: (value) => masker.value(value),
    warn: warning,
    content: options.traceContent === true,
  });
  const view = await liveViewOf(options, github);
  const progress: ProgressListener = options.quiet
    ? () => {}
    : (view?.listener ??
      progressLines(
        (line) => process.stderr.write(line),
        (text) => masker.text(text),
      ));
  const credentials = credentialPaths(process.env, options.providers.used);
  const provider =
    options.connections && !options.offline
      ? new Provider({ connections: options.connections, maxRetries: CALL_RETRIES, requestTimeoutMs: REQUEST_TIMEOUT_MS, pacer: options.organisation?.pacer })
      : undefined;
  const journal = new Journal(
    {
      // The live spans take the time the file records: `conclave trace` of the file gives the same spans.
      write: (event) => {
        const at = Date.now();
        writer.append(event, at);
        trace?.add(event, at);
      },
      sync: () => writer.syncSoon(),
      lineOf: (event) => writer.lineOf(event),
    },
    options.recording,
  );
  return { unmask, trace, view, progress, credentials, provider, journal };
}

/**
 * The live view is for a person at a terminal; CI logs and pipes get plain lines. A terminal too
 * narrow for a line per agent (or one that says 0 columns) gets the plain lines too.
 */
async function liveViewOf(options: EnvironmentOptions, github: boolean): Promise<LiveView | undefined> {
  const interactive =
    !options.quiet && !options.json && !github && process.stdout.isTTY === true && !process.env.CI && (process.stdout.columns ?? 0) >= MIN_LIVE_COLUMNS;
  if (!interactive) return undefined;
  const { liveView, viewLines } = await import('./output/live-view.js');
  const lines = viewLines(options.workflow.spec);
  const view = liveView(lines, options.limitsOnLive ?? options.limits);
  await view.ready;
  return view;
}
