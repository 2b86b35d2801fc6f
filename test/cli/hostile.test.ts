import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conclave } from '../helpers/cli.js';

/**
 * Hostile workflows and arguments (issue 11): each one ends in exit 2 with a message that names
 * the file it is about (and its line, where it has one), and never a stack trace.
 */
const GOOD = 'name: ok\ninputs:\n  n: { type: integer }\nagents:\n  lead: { role: manager }\nkickoff: hi\n';
const nest = (n: number) => `${'('.repeat(n)}1${')'.repeat(n)}`;

/** [what, the command's arguments, files to write, what stderr must contain] */
const CASES: [string, string[], Record<string, string>, string][] = [
  ['a missing workflow', ['run', 'missing.yml'], {}, 'missing.yml'],
  ['a directory for a workflow', ['run', 'dir'], {}, 'dir'],
  ['an empty workflow', ['run', 'empty.yml'], { 'empty.yml': '' }, 'empty.yml:'],
  ['a binary workflow', ['run', 'bin.yml'], { 'bin.yml': '\u0000\u0001\u0002name: x\n' }, 'bin.yml:'],
  ['a list for a workflow', ['run', 'list.yml'], { 'list.yml': '- a\n- b\n' }, 'list.yml:1:1'],
  ['a scalar for a workflow', ['run', 'scalar.yml'], { 'scalar.yml': 'hello\n' }, 'scalar.yml:1:1'],
  ['a session file given to run', ['run', 's.jsonl'], { 's.jsonl': '{"type":"header"}\n' }, 's.jsonl is a session file, not a workflow'],
  ['a session file named .yml', ['run', 's.yml'], { 's.yml': '{"type":"header","format":1}\n' }, 's.yml is a session file'],
  [
    'a session file given to graph',
    ['graph', 's.jsonl'],
    { 's.jsonl': '{"type":"header"}\n{"seq":1}\n' },
    's.jsonl is a session file, not a workflow: print it with conclave show s.jsonl',
  ],
  [
    'a session file given to validate',
    ['validate', 's.jsonl'],
    { 's.jsonl': '{"type":"header"}\n{"seq":1}\n' },
    's.jsonl is a session file, not a workflow: print it with conclave show s.jsonl',
  ],
  [
    'a billion laughs',
    ['run', 'bomb.yml'],
    {
      'bomb.yml': `a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n${GOOD}`,
    },
    'bomb.yml:',
  ],
  ['a self-repeating alias', ['run', 'alias.yml'], { 'alias.yml': `x: &a [*a]\n${GOOD}` }, 'alias.yml:1:8'],
  ['5,000 nested parentheses', ['validate', 'parens.yml'], { 'parens.yml': `${GOOD}outputs:\n  o: $<< ${nest(5000)} >>\n` }, 'parens.yml:8:'],
  ['lists nested 100,000 deep', ['validate', 'deep.yml'], { 'deep.yml': `x: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n` }, 'deep.yml:1:'],
  ['a tab in indentation', ['run', 'tab.yml'], { 'tab.yml': 'name: t\nagents:\n\tlead: { role: manager }\nkickoff: hi\n' }, 'tab.yml:3:'],
  [
    'a 1 MB kickoff of garbage',
    ['run', 'big.yml'],
    { 'big.yml': `name: big\nagents:\n  lead: { role: manager }\nkickoff: $<< ${'x.'.repeat(500_000)}y >>\n` },
    'big.yml:4:',
  ],
  ['a timeout no timer can hold', ['run', 'long.yml'], { 'long.yml': `${GOOD}limits: { timeout: 600h }\n` }, 'long.yml:7:'],
  ['a zero timeout', ['run', 'zero.yml'], { 'zero.yml': `${GOOD}limits: { timeout: 0ms }\n` }, 'zero.yml:7:'],
  [
    'an undeclared input in the kickoff',
    ['run', 'gh.yml'],
    { 'gh.yml': 'name: gh\nagents:\n  lead: { role: manager }\nkickoff: $<< inputs.x >>\n' },
    'gh.yml:4:',
  ],
  ['tools_env naming the API key', ['run', 'env.yml'], { 'env.yml': `${GOOD}tools_env: [ANTHROPIC_API_KEY]\n` }, 'env.yml:7:'],
  ['an unknown tool', ['run', 'tool.yml'], { 'tool.yml': 'name: t\nagents:\n  lead: { role: manager, tools: [rm_rf] }\nkickoff: hi\n' }, 'tool.yml:3:'],
  ['-i without =', ['run', 'w.yml', '-i', 'n'], { 'w.yml': GOOD }, '-i expects key=value'],
  ['-i of an unknown input', ['run', 'w.yml', '-i', 'nope=1'], { 'w.yml': GOOD }, 'the workflow has no input "nope"'],
  ['-i of the wrong type', ['run', 'w.yml', '-i', 'n=$(rm -rf ~)'], { 'w.yml': GOOD }, 'input "n" must be a whole number'],
  ['--session ""', ['run', 'w.yml', '--session', ''], { 'w.yml': GOOD }, '--session needs a file path'],
  ['--session that exists', ['run', 'w.yml', '--session', 'w.yml'], { 'w.yml': GOOD }, 'the session file w.yml exists already'],
  ['--session in a directory that is a file', ['run', 'w.yml', '--session', 'w.yml/s.jsonl'], { 'w.yml': GOOD }, 'w.yml/s.jsonl'],
  ['--workspace that does not exist', ['run', 'w.yml', '--workspace', 'nowhere'], { 'w.yml': GOOD }, 'the workspace directory nowhere does not exist'],
  ['--budget-usd of words', ['run', 'w.yml', '--budget-usd', 'lots'], { 'w.yml': GOOD }, '--budget-usd must be a number of dollars above 0'],
  ['--budget-usd of 0', ['run', 'w.yml', '--budget-usd', '0'], { 'w.yml': GOOD }, '--budget-usd must be a number of dollars above 0'],
  ['--max-turns of -1', ['run', 'w.yml', '--max-turns', '-1'], { 'w.yml': GOOD }, '--max-turns must be a whole number'],
  ['--timeout of 600h', ['run', 'w.yml', '--timeout', '600h'], { 'w.yml': GOOD }, '--timeout must be at most 596h'],
  ['--timeout of words', ['run', 'w.yml', '--timeout', 'soon'], { 'w.yml': GOOD }, '--timeout must be a duration'],
  ['--response-cache that is a directory', ['run', 'w.yml', '--response-cache', 'dir'], { 'w.yml': GOOD }, 'the response cache dir cannot be used'],
  ['--response-cache that is not SQLite', ['run', 'w.yml', '--response-cache', 'w.yml'], { 'w.yml': GOOD }, 'the response cache w.yml cannot be used'],
  ['--response-cache of an unknown scheme', ['run', 'w.yml', '--response-cache', 'ftp://x'], { 'w.yml': GOOD }, '--response-cache takes a file'],
  ['--offline alone', ['run', 'w.yml', '--offline'], { 'w.yml': GOOD }, '--offline answers only from --response-cache or --replay'],
  ['--replay of a missing file', ['run', 'w.yml', '--replay', 'missing.jsonl'], { 'w.yml': GOOD }, 'cannot read missing.jsonl: no such file'],
  ['--replay of a workflow', ['run', 'w.yml', '--replay', 'w.yml'], { 'w.yml': GOOD }, 'w.yml:1: not a conclave session file'],
  ['resume of a workflow', ['resume', 'w.yml'], { 'w.yml': GOOD }, 'w.yml:1: not a conclave session file'],
  [
    'resume --at without --out',
    ['resume', 's.jsonl', '--at', '1'],
    {
      's.jsonl':
        '{"type":"header","format":1,"run_id":"r","conclave_version":"0","workflow":{"path":"w.yml","sha256":"x"},"inputs":{},"session":"s","started_at":"t"}\n',
    },
    '--at and --out go together',
  ],
  [
    'resume --at past the end',
    ['resume', 's.jsonl', '--at', '99', '--out', 'o.jsonl'],
    {
      's.jsonl':
        '{"type":"header","format":1,"run_id":"r","conclave_version":"0","workflow":{"path":"w.yml","sha256":"x"},"inputs":{},"session":"s","started_at":"t"}\n',
    },
    '--at must be a sequence number from 0 to 0',
  ],
  [
    'resume of a session whose workflow is gone',
    ['resume', 's.jsonl'],
    {
      's.jsonl':
        '{"type":"header","format":1,"run_id":"r","conclave_version":"0","workflow":{"path":"gone.yml","sha256":"x"},"inputs":{},"session":"s","started_at":"t"}\n',
    },
    'gone.yml',
  ],
  [
    'resume of a session whose workflow path is /dev/zero',
    ['resume', 's.jsonl'],
    {
      's.jsonl':
        '{"type":"header","format":1,"run_id":"r","conclave_version":"0","workflow":{"path":"dir","sha256":"x"},"inputs":{},"session":"s","started_at":"t"}\n',
    },
    'dir',
  ],
  ['graph of a directory', ['graph', 'dir'], {}, 'dir'],
  ['validate of a missing file', ['validate', 'missing.yml'], {}, 'missing.yml'],
  ['an unknown option', ['run', 'w.yml', '--budget', '5'], { 'w.yml': GOOD }, "unknown option '--budget'"],
  ['an unknown command', ['rnu', 'w.yml'], {}, "unknown command 'rnu'"],
];

describe('hostile workflows and arguments', () => {
  it(`${CASES.length} of them: exit 2, a plain message naming the file, no stack trace`, async () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40);
    const failures: string[] = [];
    const run = async ([what, args, files, expected]: (typeof CASES)[number]) => {
      const dir = mkdtempSync(join(tmpdir(), 'conclave-hostile-'));
      mkdirSync(join(dir, 'dir'));
      for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
      const r = await conclave(args, { cwd: dir, env: { ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdef', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } });
      // validate lists its diagnostics on stdout; everything else says what is wrong on stderr.
      const said = `${r.stderr}${r.stdout}`;
      const ok = r.code === 2 && said.includes(expected) && !/\n\s+at |internal error/.test(said);
      if (!ok) failures.push(`${what} (exit ${r.code}): ${said.slice(0, 300)}`);
    };
    for (let i = 0; i < CASES.length; i += 4) await Promise.all(CASES.slice(i, i + 4).map(run));
    expect(failures).toEqual([]);
  }, 120_000);
});
