import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Shared helpers for the scripts under bench/, which report into docs/benchmarks.md. */

const BENCHMARKS_MD = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));

const PREAMBLE = `# Benchmarks

Figures on this page come from \`npm run bench\` (each section names the script
that produced it and the machine it ran on); rerun it to refresh them.
`;

/** One line describing the machine, so figures can be read in context. */
export function machineInfo(): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? 'unknown CPU';
  const memoryGiB = (os.totalmem() / 2 ** 30).toFixed(1);
  return `${model}, ${cpus.length} logical cores, ${memoryGiB} GiB RAM, Node ${process.version}, ${os.type()} ${os.release()} ${os.arch()}`;
}

/** The first lines of every benchmark section: how to run it again, and where it ran. */
export function provenance(command: string): string[] {
  return [`Command: \`${command}\``, '', `Machine: ${machineInfo()}`];
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of no values');
  const sorted = [...xs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/**
 * Writes `## title` followed by body into docs/benchmarks.md, replacing the
 * section of that title (up to the next `## ` heading) or appending it, and
 * leaving the other benchmarks' sections as they are; prints the body too.
 */
export async function writeBenchmarkSection(title: string, body: string): Promise<void> {
  const existing = await readFile(BENCHMARKS_MD, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return PREAMBLE;
    throw error;
  });
  const section = `## ${title}\n\n${body.trim()}\n`;
  const lines = existing.split('\n');
  const start = lines.findIndex((line) => line === `## ${title}`);
  let updated: string;
  if (start < 0) {
    updated = `${existing.trimEnd()}\n\n${section}`;
  } else {
    const next = lines.findIndex((line, i) => i > start && line.startsWith('## '));
    const before = lines.slice(0, start).join('\n').trimEnd();
    const after = next < 0 ? '' : `\n${lines.slice(next).join('\n').trimEnd()}\n`;
    updated = `${before}\n\n${section}${after}`;
  }
  await mkdir(dirname(BENCHMARKS_MD), { recursive: true });
  await writeFile(BENCHMARKS_MD, updated);
  console.log(body);
}
