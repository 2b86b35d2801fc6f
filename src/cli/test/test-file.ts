import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { END_STATUSES, type EndStatus } from '../../exit-codes.js';
import type { Diagnostic } from '../../workflow/diagnostic.js';
import { COUNTS, type Expectation, type MessageMatch, type TestCase, type TestFile, type TextMatch, type ToolMatch } from './expectations.js';
import { type Path, WorkflowSource } from '../../workflow/source.js';
import { type PathKind, staysInside, testPath } from './test-paths.js';
import { describeValue, didYouMean, listOr } from '../../workflow/suggest.js';

/**
 * A test file (`NAME.test.yml`, docs/testing-workflows.md): the workflow it tests and its cases,
 * each with inputs, a recording and what must hold. Read with every problem positioned at once,
 * as `validate` reads a workflow; schemas/test.schema.json is the same shape for editors.
 */

const STATUSES: readonly EndStatus[] = END_STATUSES;
const ROOT_KEYS = ['workflow', 'cases'];
const CASE_KEYS = ['name', 'inputs', 'session', 'workspace', 'expect'];
const EXPECT_KEYS = ['status', 'outputs', 'proposals', 'votes', 'tools', 'not_tools', 'messages', 'not_messages', 'files', 'cost_usd', ...COUNTS, 'graders'];
const TOOL_KEYS = ['agent', 'name', 'input'];
const MESSAGE_KEYS = ['from', 'to', 'contains'];
const MATCH_KEYS = ['contains', 'matches'];

type Mapping = Record<string, unknown>;

const isMapping = (value: unknown): value is Mapping => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads and checks a test file: the test, or every problem found, positioned. */
/** `root`: the folder a case's recording and workspace must stay below (conclave test's current folder). */
export function loadTestFile(file: string, root = process.cwd()): { test?: TestFile; diagnostics: Diagnostic[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message;
    return { diagnostics: [{ file, line: 1, col: 1, severity: 'error', message: `cannot read the test file: ${why}` }] };
  }
  const source = new WorkflowSource(file, text);
  const syntax = source.syntaxErrors();
  if (syntax.length > 0) return { diagnostics: syntax };
  let data: unknown;
  try {
    data = source.doc.toJS({ maxAliasCount: 1000 });
  } catch (e) {
    return { diagnostics: [source.error({ line: 1, col: 1 }, `the test file cannot be read as YAML: ${(e as Error).message}`)] };
  }
  const reader = new TestFileReader(source, dirname(resolve(file)), root);
  const test = reader.read(data);
  return reader.problems.length > 0 ? { diagnostics: reader.problems } : { test, diagnostics: [] };
}

class TestFileReader {
  readonly problems: Diagnostic[] = [];

  constructor(
    private readonly source: WorkflowSource,
    private readonly dir: string,
    private readonly root: string,
  ) {}

  read(data: unknown): TestFile | undefined {
    if (!isMapping(data)) return (this.fail([], `a test file is a mapping with workflow: and cases:; found ${describeValue(data)}`), undefined);
    this.keys([], data, ROOT_KEYS);
    const workflow = this.file(['workflow'], data.workflow, 'the workflow the cases run', 'workflow');
    if (!Array.isArray(data.cases) || data.cases.length === 0) {
      this.fail(data.cases === undefined ? [] : ['cases'], 'cases must be a list of at least one case (name, session, expect)');
      return undefined;
    }
    const cases = data.cases.map((c, i) => this.testCase(['cases', i], c));
    const names = new Set<string>();
    cases.forEach((c, i) => {
      if (!c) return;
      if (names.has(c.name)) this.fail(['cases', i, 'name'], `two cases are named "${c.name}": give each its own name`);
      names.add(c.name);
    });
    if (!workflow) return undefined;
    return { file: this.source.file, workflow, cases: cases.filter((c): c is TestCase => c !== undefined) };
  }

  private testCase(path: Path, data: unknown): TestCase | undefined {
    if (!isMapping(data)) return (this.fail(path, `a case is a mapping (name, inputs, session, expect); found ${describeValue(data)}`), undefined);
    this.keys(path, data, CASE_KEYS);
    const name = this.text([...path, 'name'], data.name, true);
    const inputs: Record<string, string> = {};
    if (data.inputs !== undefined && !isMapping(data.inputs)) this.fail([...path, 'inputs'], `inputs must be a mapping of input names to values`);
    for (const [key, value] of Object.entries(isMapping(data.inputs) ? data.inputs : {})) {
      if (value === null || typeof value === 'object') this.fail([...path, 'inputs', key], `the input "${key}" must be a string, a number or true/false`);
      else inputs[key] = String(value);
    }
    const session = data.session === undefined ? undefined : this.file([...path, 'session'], data.session, 'the recording', 'session');
    const workspace = data.workspace === undefined ? undefined : this.file([...path, 'workspace'], data.workspace, 'the workspace', 'workspace');
    const expect = isMapping(data.expect) ? this.expectations([...path, 'expect'], data.expect) : [];
    if (data.expect !== undefined && !isMapping(data.expect)) this.fail([...path, 'expect'], 'expect must be a mapping of what must hold');
    if (name === undefined) return undefined;
    return {
      name,
      at: this.source.keyPosition(path),
      inputs,
      ...(session ? { session, sessionText: String(data.session) } : {}),
      ...(workspace ? { workspace } : {}),
      expect,
    };
  }

  private expectations(path: Path, data: Mapping): Expectation[] {
    this.keys(path, data, EXPECT_KEYS);
    const out: Expectation[] = [];
    const at = (...more: Path) => this.source.keyPosition([...path, ...more]);
    if (data.status !== undefined) {
      if (typeof data.status !== 'string' || !STATUSES.includes(data.status as EndStatus))
        this.fail(
          [...path, 'status'],
          `status must be one of ${listOr(STATUSES)}; found ${describeValue(data.status)}${didYouMean(String(data.status), STATUSES)}`,
        );
      else out.push({ kind: 'status', at: at('status'), status: data.status });
    }
    for (const [name, value] of this.entries([...path, 'outputs'], data.outputs)) {
      const match = this.match([...path, 'outputs', name], value);
      if (match) out.push({ kind: 'output', at: at('outputs', name), name, match });
    }
    for (const [id, winner] of this.entries([...path, 'proposals'], data.proposals)) {
      const text = this.text([...path, 'proposals', id], winner, true);
      if (text !== undefined) out.push({ kind: 'proposal', at: at('proposals', id), id, winner: text });
    }
    const tools = this.list([...path, 'tools'], data.tools).map(([i, v]) => this.tool([...path, 'tools', i], v));
    if (tools.length > 0 && tools.every((t) => t !== undefined)) out.push({ kind: 'tools', at: at('tools'), calls: tools as ToolMatch[] });
    for (const [i, v] of this.list([...path, 'not_tools'], data.not_tools)) {
      const call = this.tool([...path, 'not_tools', i], v);
      if (call) out.push({ kind: 'not_tool', at: call.at, call });
    }
    for (const [i, v] of this.list([...path, 'messages'], data.messages)) {
      const message = this.message([...path, 'messages', i], v);
      if (message) out.push({ kind: 'message', at: message.at, message });
    }
    for (const [i, v] of this.list([...path, 'not_messages'], data.not_messages)) {
      const message = this.message([...path, 'not_messages', i], v);
      if (message) out.push({ kind: 'not_message', at: message.at, message });
    }
    for (const [voter, option] of this.entries([...path, 'votes'], data.votes)) {
      const text = this.text([...path, 'votes', voter], option, true);
      // An agent by its name, or a person's seat as @login or @org/team.
      if (text !== undefined) out.push({ kind: 'vote', at: at('votes', voter), voter, option: text });
    }
    for (const what of COUNTS) {
      const bound = data[what] === undefined ? undefined : this.bound([...path, what], what, data[what]);
      if (bound) out.push({ kind: 'count', at: at(what), what, ...bound });
    }
    for (const [id, value] of this.entries([...path, 'graders'], data.graders)) {
      const bound = typeof value === 'number' ? { min: value, max: value } : this.bound([...path, 'graders', id], `graders.${id}`, value, true);
      if (bound) out.push({ kind: 'grader', at: at('graders', id), id, ...bound });
    }
    for (const [file, value] of this.entries([...path, 'files'], data.files)) {
      if (!staysInside(file)) {
        this.fail(
          [...path, 'files', file],
          `files names a file of the run's workspace: ${JSON.stringify(file)} leaves it (give a path below it, without ..)`,
          true,
        );
        continue;
      }
      const match = this.match([...path, 'files', file], value);
      if (match) out.push({ kind: 'file', at: at('files', file), path: file, match });
    }
    if (data.cost_usd !== undefined) {
      const cost = data.cost_usd;
      if (!isMapping(cost) || typeof cost.max !== 'number' || !(cost.max >= 0))
        this.fail([...path, 'cost_usd'], 'cost_usd must be { max: USD }, USD a number of at least 0');
      else this.keys([...path, 'cost_usd'], cost, ['max']), out.push({ kind: 'cost', at: at('cost_usd'), maxUsd: cost.max });
    }
    return out;
  }

  /** `{ min: N }`, `{ max: N }` or both, N at least 0 (or any number, where a value may be below 0). */
  private bound(path: Path, what: string, value: unknown, signed = false): { min?: number; max?: number } | undefined {
    const ok = (n: unknown) => n === undefined || (typeof n === 'number' && (signed || n >= 0) && Number.isFinite(n));
    if (!isMapping(value) || (value.min === undefined && value.max === undefined) || !ok(value.min) || !ok(value.max))
      return (
        this.fail(path, `${what} must be ${signed ? 'a number, or ' : ''}{ max: N } or { min: N } or both, N a number${signed ? '' : ' of at least 0'}`),
        undefined
      );
    if (typeof value.min === 'number' && typeof value.max === 'number' && value.min > value.max)
      return (this.fail(path, `${what}.min (${value.min}) is over ${what}.max (${value.max}): no run can hold both`), undefined);
    this.keys(path, value, ['min', 'max']);
    return { ...(typeof value.min === 'number' ? { min: value.min } : {}), ...(typeof value.max === 'number' ? { max: value.max } : {}) };
  }

  private tool(path: Path, data: unknown): ToolMatch | undefined {
    if (!isMapping(data)) return (this.fail(path, `a tool call is a mapping { agent, name, input }; found ${describeValue(data)}`), undefined);
    this.keys(path, data, TOOL_KEYS);
    const name = this.text([...path, 'name'], data.name, true);
    const agent = data.agent === undefined ? undefined : this.agent([...path, 'agent'], data.agent);
    if (data.input !== undefined && !isMapping(data.input))
      this.fail([...path, 'input'], "input must be a mapping: the part of the call's input that must match");
    if (name === undefined) return undefined;
    return { at: this.source.keyPosition(path), name, ...(agent ? { agent } : {}), ...(isMapping(data.input) ? { input: data.input } : {}) };
  }

  private message(path: Path, data: unknown): MessageMatch | undefined {
    if (!isMapping(data)) return (this.fail(path, `a message is a mapping { from, to, contains }; found ${describeValue(data)}`), undefined);
    this.keys(path, data, MESSAGE_KEYS);
    if (data.from === undefined && data.to === undefined && data.contains === undefined)
      return (this.fail(path, 'a message names from, to or contains'), undefined);
    const from = data.from === undefined ? undefined : this.agent([...path, 'from'], data.from);
    const to = data.to === undefined ? undefined : this.agent([...path, 'to'], data.to);
    const contains = data.contains === undefined ? undefined : this.text([...path, 'contains'], data.contains, true);
    return { at: this.source.keyPosition(path), ...(from ? { from } : {}), ...(to ? { to } : {}), ...(contains !== undefined ? { contains } : {}) };
  }

  /** An exact text, or { contains } / { matches }. */
  private match(path: Path, value: unknown): TextMatch | undefined {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return { equals: String(value) };
    if (!isMapping(value) || Object.keys(value).length !== 1)
      return (this.fail(path, `expected a text, { contains: TEXT } or { matches: REGEX }; found ${describeValue(value)}`), undefined);
    this.keys(path, value, MATCH_KEYS);
    if (typeof value.contains === 'string') return { contains: value.contains };
    if (typeof value.matches === 'string') {
      try {
        return { matches: new RegExp(value.matches, 'u') };
      } catch (e) {
        return (this.fail([...path, 'matches'], `not a regular expression: ${(e as Error).message}`), undefined);
      }
    }
    if ('contains' in value || 'matches' in value) this.fail(path, `contains and matches take a text; found ${describeValue(Object.values(value)[0])}`);
    return undefined;
  }

  private agent(path: Path, value: unknown): string | undefined {
    const name = this.text(path, value, true);
    return name?.replace(/^@/, '');
  }

  private text(path: Path, value: unknown, required: boolean): string | undefined {
    if (typeof value === 'string' && value !== '') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (value !== undefined || required)
      this.fail(path, value === '' ? `${String(path.at(-1))} must not be empty` : `${String(path.at(-1))} must be a text; found ${describeValue(value)}`);
    return undefined;
  }

  /** A path relative to the test file, where it really is (test-paths.ts); a recording that is missing is said when the case runs. */
  private file(path: Path, value: unknown, what: string, kind: PathKind): string | undefined {
    const text = this.text(path, value, true);
    if (text === undefined) return undefined;
    const full = testPath(this.root, resolve(this.dir, text), kind);
    return typeof full === 'string' ? full : (this.fail(path, `${what} ${text} ${full.why}`), undefined);
  }

  private entries(path: Path, value: unknown): [string, unknown][] {
    if (value === undefined) return [];
    if (!isMapping(value)) return (this.fail(path, `${String(path.at(-1))} must be a mapping; found ${describeValue(value)}`), []);
    return Object.entries(value);
  }

  private list(path: Path, value: unknown): [number, unknown][] {
    if (value === undefined) return [];
    if (!Array.isArray(value)) return (this.fail(path, `${String(path.at(-1))} must be a list; found ${describeValue(value)}`), []);
    return value.map((v, i) => [i, v]);
  }

  private keys(path: Path, data: Mapping, allowed: readonly string[]): void {
    for (const key of Object.keys(data)) {
      if (allowed.includes(key)) continue;
      const where =
        path.length === 0
          ? 'in the test file'
          : `in ${path
              .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
              .join('')
              .slice(1)}`;
      this.fail([...path, key], `unknown key "${key}" ${where}${didYouMean(key, allowed)}; expected ${listOr(allowed)}`, true);
    }
  }

  private fail(path: Path, message: string, atKey = false): void {
    this.problems.push(this.source.error(atKey || path.length === 0 ? this.source.keyPosition(path) : this.source.valuePosition(path), message));
  }
}
