import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readExperiment, writeExperiment, type ExperimentFile } from '../../src/cli/experiment/experiment-file.js';
import { UsageError } from '../../src/cli/usage-error.js';
import { goodExperiment } from '../fixtures/experiment-file.js';

/** experiment.json read as hostile input (docs/experiments.md: --recompute): each field that does not fit is a UsageError naming it. */

const GOOD = goodExperiment('t.test.yml');

function read(value: unknown): ExperimentFile | string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-experiment-file-'));
  writeFileSync(join(dir, 'experiment.json'), typeof value === 'string' ? value : JSON.stringify(value));
  try {
    return readExperiment(dir);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
}

describe('experiment.json', () => {
  it('what it writes it reads back as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-experiment-file-'));
    writeExperiment(dir, GOOD as unknown as ExperimentFile);
    expect(readExperiment(dir)).toEqual(GOOD);
    expect(read({ ...GOOD, cwd: 'sub/dir', design: { ...GOOD.design, stages: 1 } })).toMatchObject({ cwd: 'sub/dir' });
  });

  it('a missing file, and a file that is not JSON, each say so', () => {
    expect(readExperiment.bind(null, mkdtempSync(join(tmpdir(), 'none-')))).toThrow(/experiment\.json: it does not exist: give the folder an experiment wrote/);
    expect(read('{ not json')).toMatch(/experiment\.json: .*JSON/);
  });

  it.each([
    [[], 'no "conclave_experiment": 1'],
    [{ ...GOOD, conclave_experiment: 2 }, 'no "conclave_experiment": 1'],
    [{ ...GOOD, id: '' }, 'no id'],
    [{ ...GOOD, id: 7 }, 'no id'],
    [{ ...GOOD, test_files: 'x' }, '"test_files" must be paths inside'],
    [{ ...GOOD, test_files: ['/etc/t.test.yml'] }, '"test_files" must be paths inside'],
    [{ ...GOOD, test_files: ['../t.test.yml'] }, '"test_files" must be paths inside'],
    [{ ...GOOD, test_files: [''] }, '"test_files" must be paths inside'],
    [{ ...GOOD, cwd: '../up' }, '"cwd" must be a path inside'],
    [{ ...GOOD, cwd: 3 }, '"cwd" must be a path inside'],
    [{ ...GOOD, cases: [{ file: 'other.test.yml', name: 'x' }] }, 'every case must name one of "test_files"'],
    [{ ...GOOD, cases: [{ file: 't.test.yml', name: 1 }] }, 'every case must name one of "test_files"'],
    [{ ...GOOD, cases: 'x' }, 'every case must name one of "test_files"'],
    [{ ...GOOD, design: { ...GOOD.design, alpha: 'big' } }, '"design" must hold'],
    [{ ...GOOD, design: { ...GOOD.design, repeat: null } }, '"design" must hold'],
    [{ ...GOOD, design: { ...GOOD.design, stages: 3 } }, '"design" must hold'],
    [{ ...GOOD, design: [] }, '"design" must hold'],
    [{ ...GOOD, guardrails: { ...GOOD.guardrails, failures: '5 %' } }, '"guardrails" must hold four limits'],
    [{ ...GOOD, primary: 1 }, 'no "primary"'],
    [{ ...GOOD, runs: {} }, 'no "runs"'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], case: 1 }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], case: -1 }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], case: 0.5 }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], version: 'other' }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], stage: 3 }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], repeat: '1' }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [GOOD.runs[0], { ...GOOD.runs[0], session: 'runs/../../x.jsonl' }] }, 'run 2 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], session: 'elsewhere/a.jsonl' }] }, 'run 1 must name'],
    [{ ...GOOD, runs: [{ ...GOOD.runs[0], session: 'runs/a.jsonl.txt' }] }, 'run 1 must name'],
    [{ ...GOOD, runs: ['x'] }, 'run 1 must name'],
  ])('refuses %j: %s', (value, said) => {
    const got = read(value);
    expect(typeof got).toBe('string');
    expect(got as string).toContain(said);
    expect(got as string).toContain('it is not an experiment this conclave wrote');
  });
});
