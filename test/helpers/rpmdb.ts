/**
 * Small rpm databases with chosen contents, for tests: header blobs as rpm stores them (headerExport:
 * il, dl, index, data store; big-endian) and the ndb format that holds them (SUSE's Packages.db),
 * which the rpm lister reads at every database location.
 */

export interface HeaderSpec {
  name: string;
  version: string;
  release: string;
  epoch?: number;
  arch?: string;
  sourceRpm?: string;
  /** MODULARITYLABEL (tag 5096): name:stream:version:context. */
  modularityLabel?: string;
}

/** An rpm header blob (il, dl, index, data store; big-endian) holding the tags of spec. */
export function rpmHeader(spec: HeaderSpec): Buffer {
  const strings: [number, string | undefined][] = [
    [1000, spec.name],
    [1001, spec.version],
    [1002, spec.release],
    [1022, spec.arch],
    [1044, spec.sourceRpm],
    [5096, spec.modularityLabel],
  ];
  const entries: { tag: number; type: number; offset: number; count: number }[] = [];
  const data: Buffer[] = [];
  let length = 0;
  for (const [tag, value] of strings) {
    if (value === undefined) continue;
    const bytes = Buffer.from(`${value}\0`, 'utf8');
    entries.push({ tag, type: 6, offset: length, count: 1 });
    data.push(bytes);
    length += bytes.length;
  }
  if (spec.epoch !== undefined) {
    const pad = (4 - (length % 4)) % 4;
    data.push(Buffer.alloc(pad));
    length += pad;
    const epoch = Buffer.alloc(4);
    epoch.writeUInt32BE(spec.epoch);
    entries.push({ tag: 1003, type: 4, offset: length, count: 1 });
    data.push(epoch);
    length += 4;
  }
  const index = Buffer.alloc(8 + entries.length * 16);
  index.writeUInt32BE(entries.length, 0);
  index.writeUInt32BE(length, 4);
  entries.forEach((e, i) => {
    index.writeInt32BE(e.tag, 8 + i * 16);
    index.writeUInt32BE(e.type, 12 + i * 16);
    index.writeUInt32BE(e.offset, 16 + i * 16);
    index.writeUInt32BE(e.count, 20 + i * 16);
  });
  return Buffer.concat([index, ...data]);
}

/** An ndb Packages.db (rpm's lib/backend/ndb/rpmpkg.c layout) holding blobs as packages 1..n. */
export function ndbDatabase(blobs: readonly Buffer[]): Buffer {
  const header = Buffer.alloc(4096);
  header.write('RpmP', 0, 'latin1');
  header.writeUInt32LE(1, 8); // generation
  header.writeUInt32LE(1, 12); // one slot page
  header.writeUInt32LE(blobs.length + 1, 16); // next package index
  for (let at = 32; at < 4096; at += 16) header.write('Slot', at, 'latin1');
  const parts = [header];
  let block = 4096 / 16;
  blobs.forEach((blob, i) => {
    const blocks = Math.ceil((16 + blob.length + 12) / 16);
    const slot = 32 + i * 16;
    header.writeUInt32LE(i + 1, slot + 4);
    header.writeUInt32LE(block, slot + 8);
    header.writeUInt32LE(blocks, slot + 12);
    const area = Buffer.alloc(blocks * 16);
    area.write('BlbS', 0, 'latin1');
    area.writeUInt32LE(i + 1, 4);
    area.writeUInt32LE(blob.length, 12);
    blob.copy(area, 16);
    area.writeUInt32LE(blob.length, area.length - 8);
    area.write('BlbE', area.length - 4, 'latin1');
    parts.push(area);
    block += blocks;
  });
  return Buffer.concat(parts);
}
