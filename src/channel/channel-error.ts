import { ConclaveError } from '../conclave-error.js';
/** A rejected channel action, such as a vote on a closed proposal; the agent reads the message as a tool error. */
export class ChannelError extends ConclaveError {}
