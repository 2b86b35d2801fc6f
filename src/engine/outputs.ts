import type { ProposalView } from '../channel/channel.js';
import type { Scope } from '../workflow/evaluate.js';
import { fillTemplate, UnresolvedValueError } from '../workflow/fill.js';
import type { Workflow } from '../workflow/load.js';
import type { Spend } from './accounting.js';
import type { Ending } from './ending.js';

export interface RunFacts {
  ending: Ending;
  agents: Record<string, { last_message: string; turns: number }>;
  proposals: readonly ProposalView[];
  total: Spend;
}

/** The workflow's `outputs`, evaluated when the run ends, with what could not be evaluated and why. */
export function evaluateOutputs(workflow: Workflow, scope: Scope, facts: RunFacts): { outputs: Record<string, string>; errors: string[] } {
  const { ending, total } = facts;
  const final: Scope = {
    ...scope,
    result: { status: ending.status, summary: ending.summary },
    agents: facts.agents,
    proposals: Object.fromEntries(facts.proposals.map((p) => [p.id, { question: p.question, status: p.status, winner: p.winner, tally: p.tally }])),
    usage: { input_tokens: total.usage.input_tokens, output_tokens: total.usage.output_tokens, cost_usd: Number(total.costUsd.toFixed(6)) },
  };
  const outputs: Record<string, string> = {};
  const errors: string[] = [];
  for (const [key, template] of workflow.templates) {
    if (template.field !== 'outputs') continue;
    try {
      outputs[key.slice('outputs.'.length)] = fillTemplate(template, final);
    } catch (e) {
      if (!(e instanceof UnresolvedValueError)) throw e;
      errors.push(e.message);
    }
  }
  return { outputs, errors };
}
