import type { SessionHeader } from '../../src/session/format.js';

/** A session's header for hand-made events in unit tests: what summaries and graders read of it. */
export const TEST_HEADER = {
  type: 'header',
  format: 1,
  run_id: 'r',
  conclave_version: '0',
  workflow: { path: 'w.yml', sha256: '' },
  inputs: {},
  session: 's',
  started_at: '',
} as unknown as SessionHeader;
