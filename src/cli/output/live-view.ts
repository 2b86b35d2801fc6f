import { Listr, type ListrLogger } from 'listr2';
import type { ProgressEvent, ProgressListener } from '../../engine/progress-events.js';
import { formatUsd } from '../../provider/money.js';
import { printable } from './terminal-text.js';
import { WAIT_WORDS } from './progress-lines.js';
import type { Limits } from '../../workflow/limits.js';
import type { WorkflowSpec } from '../../workflow/types.js';

interface AgentLine {
  state: string;
  turns: number;
  tokens: number;
  costUsd: number;
}

export interface LiveView {
  /** Resolves when every line is on screen: start the run after it. */
  ready: Promise<void>;
  listener: ProgressListener;
  /** The run ended: every line shows its last state, and the view stops. */
  finish(): Promise<void>;
}

/**
 * The terminal view of a run (listr2): a line per agent with its state (waiting, thinking,
 * using a tool and which, idle, done, stopped mid-turn, failed), turns, tokens and cost, and a team line with the
 * elapsed time, spend against the budget and turns against max_turns. NO_COLOR is honoured by
 * listr2's colours. Agents made at run time are folded into one line each under the name they
 * come from (a template, an agent with for_each, `NAME-fork`): `@reviewer-*  12 agents: 3
 * thinking, 9 idle`, however many there are.
 */
export function liveView(agents: readonly string[], limits: Limits, options: { renderer?: 'default' | 'test'; logger?: ListrLogger } = {}): LiveView {
  const lines = new Map<string, AgentLine>(agents.map((a) => [a, { state: 'waiting', turns: 0, tokens: 0, costUsd: 0 }]));
  /** For a folded line: its agents, each with its own line. */
  const members = new Map<string, Map<string, AgentLine>>();
  const lineOf = (agent: string): { key: string; line: AgentLine } | undefined => {
    const own = lines.get(agent);
    if (own && !members.has(agent)) return { key: agent, line: own };
    const key = agent.replace(/-[0-9]+$/, '');
    if (!lines.has(key) || key === agent) return undefined;
    const group = members.get(key) ?? new Map<string, AgentLine>();
    members.set(key, group);
    const line = group.get(agent) ?? { state: 'waiting', turns: 0, tokens: 0, costUsd: 0 };
    group.set(agent, line);
    return { key, line };
  };
  const titles = new Map<string, (title: string) => void>();
  const started = Date.now();
  const warnings: string[] = [];
  let teamTurns = 0;
  let spent = 0;
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  let shown!: () => void;
  const ready = new Promise<void>((resolve) => (shown = resolve));
  const registered = () => {
    if (titles.size === agents.length + 1) shown();
  };

  const agentTitle = (name: string) => {
    const group = members.get(name);
    if (group) {
      const all = [...group.values()];
      const states = new Map<string, number>();
      for (const l of all) states.set(l.state, (states.get(l.state) ?? 0) + 1);
      const sum = (f: (l: AgentLine) => number) => all.reduce((n, l) => n + f(l), 0);
      const counts = [...states].map(([state, n]) => `${n} ${state}`).join(', ');
      return (
        `@${name}-*  ${all.length} agent${all.length === 1 ? '' : 's'}: ${counts} · ${sum((l) => l.turns)} turns · ${sum((l) => l.tokens)} tokens · ` +
        `${formatUsd(sum((l) => l.costUsd))}`
      );
    }
    const l = lines.get(name)!;
    return `@${name}  ${l.state} · ${l.turns} turn${l.turns === 1 ? '' : 's'} · ${l.tokens} tokens · ${formatUsd(l.costUsd)}`;
  };
  const teamTitle = () =>
    `team  ${Math.round((Date.now() - started) / 1000)}s · ${formatUsd(spent)} of ${formatUsd(limits.budgetUsd)} · ${teamTurns} of ${limits.maxTurns} turns`;
  const show = (name: string) => titles.get(name)?.(agentTitle(name));
  const showTeam = () => titles.get('')?.(teamTitle());

  const tasks = new Listr(
    [
      ...agents.map((name) => ({
        title: agentTitle(name),
        task: async (_: unknown, task: { title: string }) => {
          // listr2 starts tasks a moment later: show what happened meanwhile.
          titles.set(name, (title) => (task.title = title));
          show(name);
          registered();
          await ended;
          if (lines.get(name)!.state === 'failed' || [...(members.get(name)?.values() ?? [])].some((l) => l.state === 'failed'))
            throw new Error(agentTitle(name));
        },
      })),
      {
        title: teamTitle(),
        task: async (_: unknown, task: { title: string }) => {
          titles.set('', (title) => (task.title = title));
          showTeam();
          registered();
          const tick = setInterval(showTeam, 1000);
          tick.unref();
          await ended;
          clearInterval(tick);
          showTeam();
        },
      },
    ],
    {
      concurrent: true,
      exitOnError: false,
      // listr2 would exit(127) on Ctrl-C; the run handles SIGINT itself and ends as in a pipe (130).
      registerSignalListeners: false,
      renderer: options.renderer ?? 'default',
      fallbackRenderer: 'simple',
      rendererOptions: options.logger ? { logger: options.logger, title: true, state: [] } : { collapseErrors: false },
    } as never,
  );
  const running = tasks.run().catch(() => {});

  const set = (name: string, state: string) => {
    const found = lineOf(name);
    if (!found) return;
    found.line.state = state;
    show(found.key);
  };
  const listener = (e: ProgressEvent) => {
    switch (e.type) {
      case 'turn_started': {
        teamTurns++;
        const found = lineOf(e.agent);
        if (found) found.line.turns = e.turn;
        set(e.agent, 'starting');
        return showTeam();
      }
      case 'thinking':
        return set(e.agent, 'thinking');
      case 'tool':
        return set(e.agent, `using ${printable(e.tool)}`);
      case 'waiting':
        return set(e.agent, `waiting for ${WAIT_WORDS[e.reason]}`);
      case 'batched':
        return set(e.agent, 'waiting for its message batch');
      case 'turn_ended': {
        const line = lineOf(e.agent)?.line;
        if (line) {
          line.tokens += e.tokens;
          line.costUsd += e.costUsd;
        }
        spent += e.costUsd;
        set(e.agent, 'idle');
        return showTeam();
      }
      case 'turn_failed':
        return set(e.agent, 'failed');
      case 'compacted':
        return set(e.agent, e.summarised ? 'compacted its conversation' : 'cleared old tool results');
      case 'stop_reason':
        return set(e.agent, e.reason === 'refusal' ? 'refused' : `continuing after ${e.reason}`);
      case 'warning':
        warnings.push(e.message);
        return;
      default:
        return;
    }
  };
  return {
    ready,
    listener,
    finish: async () => {
      // An agent still in a turn when the run ended (Ctrl-C, a limit, the lead's complete) was stopped, not done.
      const finished = (line: AgentLine) => (line.state === 'failed' ? 'failed' : line.state === 'idle' || line.state === 'waiting' ? 'done' : 'stopped');
      for (const group of members.values()) for (const line of group.values()) line.state = finished(line);
      for (const [name, line] of lines) if (!members.has(name)) line.state = finished(line);
      for (const name of lines.keys()) show(name);
      end();
      await running;
      for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
    },
  };
}

/** The live view's lines: each declared agent, then one folded line per source of agents made at run time. */
export function viewLines(spec: WorkflowSpec): string[] {
  const agents = Object.entries(spec.agents);
  const templates = Object.entries(spec.templates ?? {});
  const forkers = [...agents, ...templates].filter(([, a]) => a.fork === true).map(([name]) => `${name}-fork`);
  return [...agents.map(([name]) => name), ...templates.map(([name]) => name), ...forkers];
}
