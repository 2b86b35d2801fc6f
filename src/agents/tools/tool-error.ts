import { ConclaveError } from '../../conclave-error.js';

/** The error a tool returns to the model for bad input: a tool result, never a thrown exception. */
export class ToolInputError extends ConclaveError {}
