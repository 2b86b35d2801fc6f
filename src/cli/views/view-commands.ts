import { type Command, Option } from 'commander';

/** The commands that read a session or a workflow and change nothing: `show`, `report`, `graph`, `grade` (defined as main.ts defines the rest). */
export function viewCommands(program: Command): Record<string, () => unknown> {
  return {
    show: () =>
      program
        .command('show')
        .description('print a session: the transcript, proposals with their tallies, usage and cost')
        .argument('<session>', 'the session file')
        .addOption(
          new Option('--format <format>', 'output format (html: the page conclave report writes)')
            .choices(['text', 'markdown', 'json', 'html'])
            .default('text'),
        )
        .option(
          '--event <seq>',
          "one recorded event in full (a model call with its whole request and response), by its number (the `seq` a test's failure names)",
        )
        .action(async (file: string, options: { format: 'text' | 'markdown' | 'json' | 'html'; event?: string }) => {
          if (options.event !== undefined) {
            process.exitCode = (await import('./show-event.js')).showEventCommand(file, options.event, options.format);
            return;
          }
          if (options.format === 'html') {
            process.stdout.write((await import('./report-command.js')).reportHtml(file));
            return;
          }
          const { showCommand } = await import('./show.js');
          process.exitCode = showCommand(file, { format: options.format });
        }),
    report: () =>
      program
        .command('report')
        .description('write one self-contained HTML page of a run from its session: cost, timeline, spawn tree, messages, votes')
        .argument('<session>', 'the session file')
        .option('-o, --output <file>', 'where to write the page (default: beside the session, SESSION.html)')
        .action(async (file: string, options: { output?: string }) => {
          const { reportCommand } = await import('./report-command.js');
          process.exitCode = reportCommand(file, options);
        }),
    graph: () =>
      program
        .command('graph')
        .description('print the agent graph of a workflow')
        .argument('<file>', 'workflow file')
        .addOption(new Option('--format <format>', 'output format').choices(['mermaid', 'json']).default('mermaid'))
        .action(async (file: string, options: { format: 'mermaid' | 'json' }) => {
          const { graphCommand } = await import('./graph-command.js');
          process.exitCode = await graphCommand(file, options);
        }),
    grade: () =>
      program
        .command('grade')
        .description("measure what a team did from its sessions (docs/graders.md): duplicate findings, votes' agreement, unanswered mentions, cost…")
        .argument('<sessions...>', 'session files')
        .option('--json', 'print the graders as JSON')
        .action(async (files: string[], options: { json?: boolean }) => {
          const { gradeCommand } = await import('./grade-command.js');
          process.exitCode = gradeCommand(files, options);
        }),
  };
}
