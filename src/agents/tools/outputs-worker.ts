import { parentPort, workerData } from 'node:worker_threads';

/** What the outputs worker is asked: the schema of complete's outputs, and the value the lead gave. */
export interface OutputsJob {
  schema: unknown;
  value: unknown;
}

export interface OutputsVerdict {
  errors: { instancePath: string; message?: string; params: Record<string, unknown> }[];
}

type AjvClass = new (options: object) => { compile(schema: unknown): ((value: unknown) => boolean) & { errors?: unknown[] | null } };

/**
 * Checks typed outputs against their declarations in a thread of its own, so that a `pattern`
 * that backtracks cannot block the run: the run's deadline, its timeout and signals still hold,
 * and the worker is terminated (docs/security.md).
 */
async function check(job: OutputsJob): Promise<OutputsVerdict> {
  // ajv is CommonJS: its class is `default` under Node's interop and `default.default` in some bundles.
  const module = (await import('ajv/dist/2020.js')) as unknown as { default: AjvClass | { default: AjvClass } };
  const Ajv2020 = 'default' in module.default ? module.default.default : module.default;
  const validate = new Ajv2020({ allErrors: true, strict: false }).compile(job.schema);
  return { errors: validate(job.value) ? [] : ((validate.errors ?? []) as OutputsVerdict['errors']) };
}

check(workerData as OutputsJob).then(
  (verdict) => parentPort!.postMessage(verdict),
  (e: Error) => parentPort!.postMessage({ failed: e.message }),
);
