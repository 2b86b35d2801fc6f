// The chunks the CLI's commands load, made by hand (scripts/build.js, scripts/build-action.js).
// Left to itself the bundler makes a chunk of each set of commands that shares a module: `validate`
// read 21 files and a run's first request 41, each resolved, read and compiled on its own. Three
// chunks instead: what `validate` loads (the workflow's loader, yaml, the schema's validator), which
// every command that reads a workflow needs too; what the commands that read a session (show,
// report, trace) share with a run; and the rest of what a run loads before it starts
// (docs/ARCHITECTURE.md: Build).
import { build } from 'rolldown';

/**
 * The modules `entry` loads before it runs (`initial`: its static imports, all the way down) and
 * every module it may load (`all`: what it imports when it needs it too), from one bundling.
 */
async function modulesOf(resolving, entry) {
  const { output } = await build({ ...resolving, input: entry, logLevel: 'silent', write: false });
  const chunks = new Map(output.filter((c) => c.type === 'chunk').map((c) => [c.fileName, c]));
  const initial = new Set();
  const walk = (chunk) => {
    if (!chunk || chunk.moduleIds.every((id) => initial.has(id))) return;
    for (const id of chunk.moduleIds) initial.add(id);
    for (const name of chunk.imports) walk(chunks.get(name));
  };
  walk(output.find((c) => c.type === 'chunk' && c.isEntry));
  return { initial, all: new Set([...chunks.values()].flatMap((chunk) => chunk.moduleIds)) };
}

/** The groups of `codeSplitting` for the commands under `root`/src/cli, bundled with `resolving`. */
export async function commandChunks(root, resolving) {
  const command = (name) => new URL(`src/cli/${name}.ts`, root).pathname;
  const validating = (await modulesOf(resolving, command('validate'))).initial;
  const run = await modulesOf(resolving, command('run-workflow'));
  // `trace` counts only what a run loads at its start, not the exporters a run may load later.
  const reading = new Set();
  const [show, report, trace] = await Promise.all(
    ['views/show', 'views/report-command', 'traces/trace-command'].map((name) => modulesOf(resolving, command(name))),
  );
  for (const [modules, shared] of [
    [show.all, run.all],
    [report.all, run.all],
    [trace.initial, run.initial],
  ])
    for (const id of modules) if (shared.has(id)) reading.add(id);
  return [
    { name: 'workflow', test: (id) => validating.has(id) },
    { name: 'session', test: (id) => reading.has(id) },
    { name: 'run', test: (id) => run.initial.has(id) },
  ];
}
