import type { LayerFiles, Package, PackageLister } from '../../model/indexing.js';
import { apk } from './version.js';

/**
 * Lists the packages of apk's database, `lib/apk/db/installed`: records separated by blank lines,
 * one `X:value` field per line (apk-tools' "installed database" format). A feature is the origin
 * package (`o:`), because the Alpine and Wolfi secdbs are keyed by origin; Clair's use of the
 * binary name (`P:`) missed every advisory filed against an origin such as openssl (quay/clair#566).
 */

const INSTALLED = 'lib/apk/db/installed';

function wants(path: string): boolean {
  return path === INSTALLED;
}

/** Each record's fields by letter. Letters such as F and R repeat; P, V and o occur once. */
function parseRecords(text: string): ReadonlyMap<string, string>[] {
  const records: ReadonlyMap<string, string>[] = [];
  let fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (fields.size > 0) records.push(fields);
      fields = new Map();
    } else if (line[1] === ':' && line[0] !== undefined) {
      fields.set(line[0], line.slice(2).trim());
    }
  }
  if (fields.size > 0) records.push(fields);
  return records;
}

function originPackage(record: ReadonlyMap<string, string>): Package | undefined {
  const name = record.get('o') || record.get('P');
  const version = record.get('V');
  if (!name || !version || !apk.valid(version)) return undefined;
  return { name, version };
}

function list(files: LayerFiles): Package[] | undefined {
  const content = files.get(INSTALLED);
  if (content === undefined) return undefined;
  const packages = new Map<string, Package>();
  // Lossy UTF-8 decoding never throws; the fields read here are ASCII.
  for (const record of parseRecords(content.toString('utf8'))) {
    const pkg = originPackage(record);
    if (pkg) packages.set(`${pkg.name}\0${pkg.version}`, pkg);
  }
  return [...packages.values()];
}

/**
 * The files the database says its packages installed: each `R:` (a file) in the last `F:` (its
 * directory) before it, as apk-tools writes a package's files.
 */
function ownedFiles(files: LayerFiles): ReadonlySet<string> | undefined {
  const content = files.get(INSTALLED);
  if (content === undefined) return undefined;
  const owned = new Set<string>();
  let directory = '';
  for (const line of content.toString('utf8').split(/\r?\n/)) {
    if (line.startsWith('F:')) directory = line.slice(2).trim();
    else if (line.startsWith('R:')) owned.add(directory === '' ? line.slice(2).trim() : `${directory}/${line.slice(2).trim()}`);
    else if (line.trim() === '') directory = '';
  }
  return owned;
}

export const apkLister = {
  name: 'apk',
  // 2: its file lists say which application packages the OS package manager installed.
  version: 2,
  format: apk.name,
  databasePaths: [INSTALLED],
  wants,
  list,
  ownedFiles,
} satisfies PackageLister;
