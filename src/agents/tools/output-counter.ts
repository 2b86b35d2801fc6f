import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

/** The bytes of a command's output past its cap, counted by another process, and how to give up on them. */
export interface CountedElsewhere {
  /** Every byte the stream had left: those Node had read but not handed on, and those `wc` read. */
  bytes: Promise<number>;
  /** Stops counting (the command left a process that holds the pipe): `bytes` then says what was counted. */
  stop(): void;
}

/**
 * Hands the rest of a command's output stream, once past its cap, to `wc -c`, which reads the
 * pipe itself: Node reading a gigabyte only to drop it allocates a buffer for every read, and a
 * Node 24 process grows by ~60 MB before its garbage collector takes them back (docs/security.md, run_command: memory
 * follows the cap, not the output; docs/BENCHMARKS.md). Undefined when `wc` cannot be started:
 * the caller goes on reading the stream itself.
 */
export function countElsewhere(stream: Readable): CountedElsewhere | undefined {
  let counter: ReturnType<typeof spawn> | undefined;
  try {
    counter = spawn('wc', ['-c'], { stdio: [stream, 'pipe', 'ignore'], env: { PATH: process.env.PATH, LC_ALL: 'C' } });
  } catch {
    // counter stays undefined
  }
  if (counter?.pid === undefined) {
    counter?.on('error', () => {});
    // Handing a stream to a child pauses it, even when the child did not start.
    stream.resume();
    return undefined;
  }
  // `wc` has its own copy of the pipe from here on: what Node already read is counted, and its copy closed.
  stream.removeAllListeners('data');
  stream.pause();
  let buffered = 0;
  for (let chunk: Buffer | null; (chunk = stream.read() as Buffer | null) !== null; ) buffered += chunk.length;
  stream.destroy();
  let printed = '';
  counter.stdout!.on('data', (text: Buffer) => (printed += text.toString()));
  const bytes = new Promise<number>((resolve) => {
    counter.on('error', () => resolve(buffered));
    counter.on('close', () => resolve(buffered + (Number.parseInt(printed.trim(), 10) || 0)));
  });
  return {
    bytes,
    stop: () => {
      if (counter.exitCode === null && counter.signalCode === null) counter.kill('SIGKILL');
    },
  };
}
