import type { Position } from '../../workflow/diagnostic.js';

/** What a case of a test file can expect (docs/testing-workflows.md: what a case can expect), as test-file.ts reads it. */

/** How a text must be: exactly, holding a text, or matching a regular expression. */
export type TextMatch = { equals: string } | { contains: string } | { matches: RegExp };

/** A tool call that must (or must not) appear: by name, optionally by agent and by part of its input. */
export interface ToolMatch {
  at: Position;
  name: string;
  agent?: string;
  input?: Record<string, unknown>;
}

export interface MessageMatch {
  at: Position;
  from?: string;
  to?: string;
  contains?: string;
}

/** One expectation of a case, where it is written, and what it asks. */
export type Expectation =
  | { kind: 'status'; at: Position; status: string }
  | { kind: 'output'; at: Position; name: string; match: TextMatch }
  | { kind: 'proposal'; at: Position; id: string; winner: string }
  | { kind: 'tools'; at: Position; calls: ToolMatch[] }
  | { kind: 'not_tool'; at: Position; call: ToolMatch }
  | { kind: 'message'; at: Position; message: MessageMatch }
  | { kind: 'file'; at: Position; path: string; match: TextMatch }
  | { kind: 'cost'; at: Position; maxUsd: number }
  | { kind: 'not_message'; at: Position; message: MessageMatch }
  | { kind: 'vote'; at: Position; voter: string; option: string }
  | { kind: 'count'; at: Position; what: CountName; min?: number; max?: number }
  | { kind: 'grader'; at: Position; id: string; min?: number; max?: number };

/** What a run's size is counted in (docs/testing-workflows.md: expectations): model calls, turns begun, tokens, seconds the run took. */
export type CountName = 'calls' | 'turns' | 'tokens' | 'wall_s';
export const COUNTS: readonly CountName[] = ['calls', 'turns', 'tokens', 'wall_s'];

export interface TestCase {
  name: string;
  at: Position;
  inputs: Record<string, string>;
  /** The recording, absolute; undefined only where none is written yet (a live run records it with --update). */
  session?: string;
  /** Where `session:` is written, for --update to say it. */
  sessionText?: string;
  /** The folder a live run works on a copy of (default: the current one). */
  workspace?: string;
  expect: Expectation[];
}

export interface TestFile {
  file: string;
  /** The workflow, absolute. */
  workflow: string;
  cases: TestCase[];
}
