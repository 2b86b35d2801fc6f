import type { SessionHeader } from '../../src/session/format.js';

/** A session file's header, as the unit tests of the writer and the reader write it. */
export const HEADER: SessionHeader = {
  type: 'header',
  format: 1,
  run_id: 'r1',
  conclave_version: '0.1.0',
  workflow: { path: 'w.yml', sha256: 'abc' },
  inputs: {},
  session: 's.jsonl',
  started_at: '2026-11-23T00:00:00.000Z',
};
