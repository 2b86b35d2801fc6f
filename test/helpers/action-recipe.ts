import { execFile, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import type { FakeAnthropic } from '../fake-anthropic/server.js';
import type { FakeGitHub } from '../fake-github/server.js';
import { ROOT } from './cli.js';

/**
 * The jobs of a recipe in examples/github, as GitHub runs them: each conclave step through
 * GitHub's @github/local-action with the event file GitHub sends, and the artifact actions played
 * against the fake GitHub API: upload-artifact adds an artifact of that workflow run,
 * download-artifact writes its files into the step's `path`, checkout gives a workspace at the commit.
 */
export type Step = { id?: string; if?: string; uses?: string; with?: Record<string, string | boolean>; run?: string; env?: Record<string, string> };
export type Job = { steps: Step[] };
export const recipe = (file: string) => parse(readFileSync(join(ROOT, 'examples/github', file), 'utf8')) as { jobs: Record<string, Job> };

export const REPOSITORY = 'octo/widgets';
export const PULL = 7;
export const COMMIT = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
export const TOKEN = 'ghs_test_0123456789';

/** The fakes a recipe's steps talk to, set by the test. */
export const fakes: { anthropic?: FakeAnthropic; gitHub?: FakeGitHub } = {};

/** The pull_request event GitHub sends when pull request PULL is opened at COMMIT. */
export const PULL_EVENT = {
  name: 'pull_request',
  payload: {
    action: 'opened',
    number: PULL,
    pull_request: { number: PULL, head: { sha: COMMIT, repo: { full_name: REPOSITORY } }, base: { repo: { full_name: REPOSITORY } } },
  },
};

/** After each test: the fake APIs it started, closed. */
export async function closeFakes(): Promise<void> {
  await fakes.anthropic?.close();
  await fakes.gitHub?.close();
  fakes.anthropic = fakes.gitHub = undefined;
}

/** `${{ a.b.c }}` in a step's `with:`, from the job's context; an expression the test does not know fails it. */
export function inputsOf(step: Step, context: Record<string, unknown>): Record<string, string> {
  return resolved(step.with ?? {}, context);
}

function resolved(map: Record<string, string | boolean>, context: Record<string, unknown>): Record<string, string> {
  const value = (path: string): string => {
    const found = path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], context);
    if (found === undefined) throw new Error(`the test has no value for \${{ ${path} }}`);
    return String(found);
  };
  return Object.fromEntries(Object.entries(map).map(([name, v]) => [name, String(v).replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, path: string) => value(path))]));
}

type StepEvent = { name: string; payload: unknown };

/** What a step of workflow run `runId` of `event` is given: its inputs, and the runner's GITHUB_* variables pointing at the fakes. */
function stepGiven(step: Step, context: Record<string, unknown>, workspace: string, runId: number, event: StepEvent, extraEnv: NodeJS.ProcessEnv) {
  // action.yml's default github-token, `${{ github.token }}`, as GitHub gives it: the job's token.
  const inputs = { 'github-token': TOKEN, ...inputsOf(step, context) };
  const eventFile = join(workspace, '..', `event-${runId}.json`);
  writeFileSync(eventFile, JSON.stringify(event.payload));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GITHUB_ACTIONS: '',
    GITHUB_OUTPUT: '',
    GITHUB_STEP_SUMMARY: '',
    GITHUB_EVENT_NAME: event.name,
    GITHUB_EVENT_PATH: eventFile,
    GITHUB_REPOSITORY: REPOSITORY,
    GITHUB_SHA: COMMIT,
    GITHUB_RUN_ID: String(runId),
    GITHUB_API_URL: fakes.gitHub!.url,
    GITHUB_GRAPHQL_URL: `${fakes.gitHub!.url}/graphql`,
    ANTHROPIC_BASE_URL: fakes.anthropic!.url,
    ...extraEnv,
  };
  return { inputs, env };
}

/** A process's end, and what it printed. */
function ran(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) =>
    execFile(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (e, stdout, stderr) => done({ code: e ? Number(e.code ?? 1) : 0, stdout, stderr })),
  );
}

/**
 * The conclave step of a job in `workspace` as workflow run `runId` of event `event`, run from the committed
 * bundle as the runner runs a node24 action (`node action/main.js`): each input as INPUT_NAME, the defaults from
 * action.yml, its outputs and summary in the GITHUB_* files. (test/e2e/action.test.ts checks that
 * @github/local-action runs the source entry the same way; it takes ~10 s to start, the bundle ~1 s.)
 */
export async function conclaveStep(
  step: Step,
  context: Record<string, unknown>,
  workspace: string,
  runId: number,
  event: StepEvent,
  extraEnv: NodeJS.ProcessEnv = {},
) {
  const { inputs, env } = stepGiven(step, context, workspace, runId, event, extraEnv);
  return bundledAction(inputs, workspace, env, join(workspace, '..', `step-${runId}-${step.id}`), extraEnv);
}

/**
 * The committed bundle run as the runner runs a node24 action in `workspace`: `inputs` as INPUT_NAME over
 * action.yml's defaults; its outputs and job summary written to files in `files` (unless `overrides` names
 * others), the outputs read back.
 */
export async function bundledAction(
  inputs: Record<string, string>,
  workspace: string,
  env: NodeJS.ProcessEnv,
  files: string,
  overrides: NodeJS.ProcessEnv = {},
) {
  mkdirSync(files, { recursive: true });
  const [outputFile, summaryFile] = [join(files, 'output'), join(files, 'summary.md')];
  writeFileSync(outputFile, '');
  writeFileSync(summaryFile, '');
  const given = Object.entries(ACTION.inputs).map(([name, spec]) => [`INPUT_${name.toUpperCase()}`, inputs[name] ?? String(spec.default ?? '')]);
  const result = await ran(process.execPath, [join(ROOT, ACTION.runs.main)], workspace, {
    ...env,
    GITHUB_WORKSPACE: workspace,
    GITHUB_OUTPUT: outputFile,
    GITHUB_STEP_SUMMARY: summaryFile,
    ...overrides,
    ...Object.fromEntries(given),
  });
  return { ...result, outputs: outputsOf(readFileSync(outputFile, 'utf8')) };
}

/**
 * The same step through GitHub's @github/local-action, running the source entry (~10 s to start): for
 * what only it stands in for, such as the artifact service (`LOCAL_ACTION_ARTIFACT_PATH`).
 */
export async function localActionStep(...[step, context, workspace, runId, event, extraEnv = {}]: Parameters<typeof conclaveStep>) {
  const { inputs, env } = stepGiven(step, context, workspace, runId, event, extraEnv);
  const dotenv = join(workspace, '..', `env-${runId}-${step.id}`);
  writeFileSync(
    dotenv,
    `${Object.entries(inputs)
      .map(([name, v]) => `INPUT_${name.toUpperCase()}=${v}`)
      .join('\n')}\nGITHUB_WORKSPACE=${workspace}\n`,
  );
  const result = await ran(join(ROOT, 'node_modules/.bin/local-action'), ['run', '.', 'src/cli/action/action-main.ts', dotenv], ROOT, env);
  const table = result.stdout.slice(result.stdout.lastIndexOf('Action Outputs'));
  const outputs = Object.fromEntries([...table.matchAll(/│\s*'([\w-]+)'\s*│\s*'(.*?)'\s*│/g)].map((m) => [m[1]!, m[2]!.replace(/\\'/g, "'")]));
  return { ...result, outputs };
}

/** action.yml: its inputs' defaults and its entry. */
const ACTION = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as { inputs: Record<string, { default?: unknown }>; runs: { main: string } };

/** GitHub's GITHUB_OUTPUT file: name=value lines and name<<DELIMITER blocks. */
export function outputsOf(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^=<]+)<<(.+)$/.exec(lines[i]!);
    const plain = /^([^=<]+)=(.*)$/.exec(lines[i]!);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2]!, i + 1);
      outputs[heredoc[1]!] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (plain) {
      outputs[plain[1]!] = plain[2]!;
    }
  }
  return outputs;
}

/** A `run:` step as the runner runs it (bash -eo pipefail in `cwd`, its env's expressions from the job's context): how it ended and its GITHUB_OUTPUT. */
export function runStep(step: Step, context: Record<string, unknown>, cwd: string): { code: number; stderr: string; outputs: Record<string, string> } {
  const outputFile = join(mkdtempSync(join(tmpdir(), 'conclave-step-')), 'output');
  writeFileSync(outputFile, '');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, GITHUB_OUTPUT: outputFile, ...resolved(step.env ?? {}, context) };
  const ran = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', step.run!], { cwd, env, encoding: 'utf8' });
  const outputs = Object.fromEntries(
    readFileSync(outputFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  return { code: ran.status ?? 1, stderr: ran.stderr, outputs };
}

/** upload-artifact: the session file as an artifact of workflow run `runId`. */
export function upload(step: Step, context: Record<string, unknown>, workspace: string, runId: number): void {
  const { name, path } = inputsOf(step, context);
  fakes.gitHub!.artifacts.push({
    id: fakes.gitHub!.artifacts.length + 1,
    name: name!,
    workflowRun: runId,
    headSha: COMMIT,
    createdAt: new Date().toISOString(),
    expired: false,
    files: { [basename(path!)]: readFileSync(join(workspace, path!), 'utf8') },
  });
}

/** checkout (a workspace with the repository at the commit) and download-artifact (the artifact's files into `path`). */
export function checkoutAndDownload(repository: string, job: Job, context: Record<string, unknown>): string {
  const workspace = join(mkdtempSync(join(tmpdir(), 'conclave-recipe-')), 'repo');
  cpSync(repository, workspace, { recursive: true });
  const download = job.steps.find((s) => s.uses?.startsWith('actions/download-artifact'))!;
  const { name, path, 'run-id': runId } = inputsOf(download, context);
  const artifact = fakes.gitHub!.artifacts.find((a) => a.name === name && String(a.workflowRun) === runId)!;
  mkdirSync(join(workspace, path!), { recursive: true });
  for (const [file, text] of Object.entries(artifact.files)) writeFileSync(join(workspace, path!, file), text);
  return workspace;
}

export const conclaveOf = (job: Job) => job.steps.find((s) => s.id === 'conclave' || s.id === 'list')!;
export const uploadOf = (job: Job) => job.steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!;
