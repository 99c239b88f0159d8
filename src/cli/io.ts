/** Where a command writes: injectable so commands can be tested without a terminal. */
export interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Human-oriented lines: stdout normally, stderr when stdout carries `--json` output. */
  say(line: string): void;
}

export function createIo(
  json: boolean,
  streams = { stdout: process.stdout, stderr: process.stderr },
): Io {
  const human = json ? streams.stderr : streams.stdout;
  return { ...streams, say: (line) => void human.write(`${line}\n`) };
}
