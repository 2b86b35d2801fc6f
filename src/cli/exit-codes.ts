/** The process exit codes of DESIGN §4. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  limit: 3,
  provider: 4,
  sigint: 130,
  sigterm: 143,
} as const;
