import { PassThrough } from 'node:stream';
import { runScan, type ScanOptions } from '../../src/scanner/command.js';

/** What `tarsier scan` did: its exit code and what it wrote. */
export interface ScanRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `tarsier scan target` in this process, as the CLI does, with output captured, the
 * environment env and the clock the data's age is judged by at now.
 */
export async function scanInProcess(target: string, options: ScanOptions, env: Record<string, string>, now: Date): Promise<ScanRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await runScan(target, options, {
    env,
    stdout,
    stderr: stderr as unknown as NodeJS.WriteStream,
    signal: new AbortController().signal,
    now: () => now,
  });
  return { code, stdout: out, stderr: err };
}
