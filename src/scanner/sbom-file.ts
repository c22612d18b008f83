import { open, readFile } from 'node:fs/promises';
import { ScanError, type LocalSbom } from './backend.js';

/**
 * A TARGET file that is an SBOM, told by its content: a JSON document (its first character, after
 * a byte order mark and white space, opens an object) is read as one, and must be one; anything
 * else (a tar, compressed or not) is left to be read as an image.
 */

/** What is read of a file to tell: a tar header's worth. */
const HEAD_BYTES = 512;
/** A tar header's magic (POSIX ustar and GNU tar alike), at this offset: a tar whose first name starts with `{` stays a tar. */
const TAR_MAGIC = { offset: 257, text: 'ustar' };

/** The SBOM the file holds; undefined when it is not a JSON document. A JSON document that is no SBOM Tarsier reads is a ScanError. */
export async function readSbomFile(path: string): Promise<LocalSbom | undefined> {
  const handle = await open(path, 'r');
  let head: Buffer;
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    head = buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
  const magic = head.subarray(TAR_MAGIC.offset, TAR_MAGIC.offset + TAR_MAGIC.text.length).toString('latin1');
  if (magic === TAR_MAGIC.text || !/^(?:\uFEFF)?\s*\{/.test(head.toString('utf8'))) return undefined;
  const bytes = await readFile(path);
  // The SBOM reader (package URLs, the format catalog) is loaded only for a file that is one.
  const { MalformedSbom, readSbom } = await import('../sbom/read.js');
  try {
    return { bytes, sbom: readSbom(bytes) };
  } catch (err) {
    if (err instanceof MalformedSbom) throw new ScanError(`${path} is a JSON document but not an SBOM Tarsier reads: ${err.message}`);
    throw err;
  }
}
