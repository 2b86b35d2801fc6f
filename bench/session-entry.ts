// What bench/session.js needs from src/, bundled by bench/load-source.js.
export { Journal } from '../src/engine/replay/journal.js';
export { Run } from '../src/engine/run.js';
export { readSession } from '../src/session/reader.js';
export { replayable, elapsedOf } from '../src/session/recording.js';
export { SessionWriter } from '../src/session/writer.js';
export { loadWorkflow } from '../src/workflow/load.js';
export { Masker } from '../src/session/masker.js';
