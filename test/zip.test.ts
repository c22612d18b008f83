/**
 * Zip archives read entry by entry (src/zip.ts), from files and from memory, against archives
 * written by Info-ZIP's zip: every entry's content as written, stored and deflated; and a bounded,
 * named refusal for an archive over its limits, an entry whose header lies about its size, an
 * encrypted entry, and a truncated archive.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { zipEntries, type ZipLimits } from '../src/zip.js';

const dir = mkdtempSync(join(tmpdir(), 'tarsier-zip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LIMITS: ZipLimits = { maxEntries: 1_000, maxEntryBytes: 1 << 20 };

/** The archive Info-ZIP's zip writes of these files (extra arguments before the archive's name). */
function zipOf(files: Record<string, string | Buffer>, ...options: string[]): string {
  const work = mkdtempSync(join(dir, 'files-'));
  for (const [name, content] of Object.entries(files)) {
    execFileSync('mkdir', ['-p', join(work, name, '..')]);
    writeFileSync(join(work, name), content);
  }
  const archive = join(work, 'archive.zip');
  execFileSync('zip', ['-q', '-r', '-X', ...options, archive, ...Object.keys(files)], { cwd: work });
  return archive;
}

async function entriesOf(source: string | Buffer, limits = LIMITS): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for await (const entry of zipEntries(source, limits)) found[entry.name] = entry.data.toString();
  return found;
}

async function failureOf(source: string | Buffer, limits = LIMITS): Promise<string> {
  try {
    await entriesOf(source, limits);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('read without an error');
}

const FILES = {
  'GHSA-1.json': '{"id":"GHSA-1"}',
  'nested/dir/GHSA-2.json': JSON.stringify({ id: 'GHSA-2', details: 'x'.repeat(100_000) }),
  'empty.json': '',
};

describe('zipEntries', () => {
  it('reads every file entry, deflated or stored, from a file and from memory, directories left out', async () => {
    for (const archive of [zipOf(FILES), zipOf(FILES, '-0')]) {
      expect(await entriesOf(archive)).toEqual(FILES);
      expect(await entriesOf(readFileSync(archive))).toEqual(FILES);
    }
  });

  it('refuses an archive of more entries than the limit, and an entry larger than it, before inflating it', async () => {
    const archive = zipOf(FILES);
    expect(await failureOf(archive, { ...LIMITS, maxEntries: 2 })).toBe('the archive holds 3 entries, more than the 2 read');
    // 10 MiB of zeros: a few KiB deflated.
    const bomb = zipOf({ 'zeros.bin': Buffer.alloc(10 << 20) });
    expect(await failureOf(bomb)).toBe(`zeros.bin inflates to ${10 << 20} bytes, more than the ${1 << 20} read`);
  });

  it('never inflates past what a header declares: a lying size is an error', async () => {
    const archive = readFileSync(zipOf({ 'zeros.bin': Buffer.alloc(100_000) }));
    // The central directory's uncompressed size (offset 24 of its entry) made 1,000 bytes.
    const central = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    archive.writeUInt32LE(1_000, central + 24);
    expect(await failureOf(archive)).toBe('zeros.bin does not inflate to the 1000 bytes its header declares');
  });

  it('names an encrypted entry, and a truncated archive', async () => {
    const encrypted = zipOf({ 'secret.json': '{}' }, '-P', 'password');
    expect(await failureOf(encrypted)).toBe('secret.json is encrypted');
    const whole = readFileSync(zipOf(FILES));
    expect(await failureOf(whole.subarray(0, whole.length - 30))).toMatch(/end of central directory record signature not found/i);
  });
});
