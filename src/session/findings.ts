/** A finding an agent recorded with `annotate` about lines of a workspace file (docs/design.md: outputs and the Action). */
export interface Finding {
  agent: string;
  path: string;
  line: number;
  end_line: number;
  level: 'notice' | 'warning' | 'failure';
  title: string | null;
  message: string;
}

/** A finding from the input of an `annotate` call that the tool accepted. */
export function findingOf(agent: string, input: Record<string, unknown>): Finding {
  const line = Number(input.line);
  return {
    agent,
    path: String(input.path).replace(/^\.\//, ''),
    line,
    end_line: input.end_line === undefined ? line : Number(input.end_line),
    // `error` is GitHub's and SARIF's word for a failure: the tool takes both.
    level: (input.level === 'error' ? 'failure' : input.level) as Finding['level'],
    title: typeof input.title === 'string' ? input.title : null,
    message: String(input.message).trim(),
  };
}
