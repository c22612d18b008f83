import yauzl, { type Entry, type ZipFile } from 'yauzl';

/**
 * Zip archives read one entry at a time (yauzl, from the central directory), so an archive of any
 * size costs the memory of its largest entry: OSV's per-ecosystem `all.zip` holds hundreds of
 * thousands of records. The limits bound what a hostile or broken archive can cost before it is
 * refused; entries' declared sizes are checked against what they inflate to (yauzl's
 * validateEntrySizes), so a lying header is an error, not a bomb.
 */
export interface ZipLimits {
  /** Entries in the central directory. */
  readonly maxEntries: number;
  /** Bytes one entry may inflate to. */
  readonly maxEntryBytes: number;
}

export interface ZipEntry {
  /** The entry's path in the archive. */
  readonly name: string;
  readonly data: Buffer;
}

/** The archive's file entries (directories left out), in central-directory order. Throws on a broken archive or a limit passed. */
export async function* zipEntries(source: string | Buffer, limits: ZipLimits): AsyncGenerator<ZipEntry> {
  const zip = await openZip(source);
  // yauzl reports a broken archive as an 'error' event at any time; one is kept and thrown at the next step.
  let failure: Error | undefined;
  zip.on('error', (err: Error) => (failure ??= err));
  try {
    if (zip.entryCount > limits.maxEntries)
      throw new Error(`the archive holds ${zip.entryCount} entries, more than the ${limits.maxEntries} read`);
    for (let entry = await nextEntry(zip, () => failure); entry; entry = await nextEntry(zip, () => failure)) {
      if (entry.fileName.endsWith('/')) continue;
      if (entry.uncompressedSize > limits.maxEntryBytes)
        throw new Error(`${entry.fileName} inflates to ${entry.uncompressedSize} bytes, more than the ${limits.maxEntryBytes} read`);
      yield { name: entry.fileName, data: await entryData(zip, entry) };
    }
  } finally {
    zip.close();
  }
}

function openZip(source: string | Buffer): Promise<ZipFile> {
  const options = { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: false };
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, zip?: ZipFile) => (err ? reject(err) : resolve(zip!));
    if (typeof source === 'string') yauzl.open(source, options, done);
    else yauzl.fromBuffer(source, options, done);
  });
}

/** The next entry, or undefined at the end of the central directory. */
function nextEntry(zip: ZipFile, failure: () => Error | undefined): Promise<Entry | undefined> {
  const failed = failure();
  if (failed) return Promise.reject(failed);
  return new Promise((resolve, reject) => {
    const settle = (outcome: () => void) => {
      zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
      outcome();
    };
    const onEntry = (entry: Entry) => settle(() => resolve(entry));
    const onEnd = () => settle(() => resolve(undefined));
    const onError = (err: Error) => settle(() => reject(err));
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    zip.readEntry();
  });
}

async function entryData(zip: ZipFile, entry: Entry): Promise<Buffer> {
  const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) =>
    zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s))),
  );
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
