import { ConclaveError } from '../conclave-error.js';

/** The run could not be set up (a setup step failed, an MCP server did not start): it ends before any turn. */
export class SetupError extends ConclaveError {}
