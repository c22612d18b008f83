/**
 * Lists the packages of an rpm database, read natively in whichever of rpm's three formats the
 * layer holds: SQLite (rpm ≥ 4.16), ndb (SUSE) or Berkeley DB (rpm ≤ 4.15).
 */
import type { LayerFiles, Package, PackageLister } from '../../model/indexing.js';
import { readBerkeleyDb } from './bdb.js';
import { parseRpmHeader, rpmFilePaths, type RpmHeader } from './header.js';
import { readNdb } from './ndb.js';
import { readSqliteRpmdb } from './sqlite.js';
import { rpm } from './version.js';

interface DatabaseFile {
  readonly path: string;
  readonly read: (content: Buffer) => Buffer[];
}

/**
 * Where rpm keeps its database, in order of preference. When a layer holds several, the newest
 * format wins: rpm converts old databases in place (`rpmdb --rebuilddb` after a backend change,
 * Fedora 33's move to SQLite, SUSE's move to ndb, RHEL upgrades) and may leave the old file
 * behind, but never goes back, so the older file is the stale one. Within a format,
 * usr/lib/sysimage/rpm (the location rpm moved to; var/lib/rpm is usually a link to it there)
 * comes first. usr/lib/sysimage/rpm/Packages also covers SLES 15 SP0–SP2, which kept Berkeley DB
 * after the move.
 */
const DATABASES: readonly DatabaseFile[] = [
  { path: 'usr/lib/sysimage/rpm/rpmdb.sqlite', read: readSqliteRpmdb },
  { path: 'var/lib/rpm/rpmdb.sqlite', read: readSqliteRpmdb },
  { path: 'usr/lib/sysimage/rpm/Packages.db', read: readNdb },
  { path: 'var/lib/rpm/Packages.db', read: readNdb },
  { path: 'usr/lib/sysimage/rpm/Packages', read: readBerkeleyDb },
  { path: 'var/lib/rpm/Packages', read: readBerkeleyDb },
];

const WANTED = new Set(DATABASES.map((db) => db.path));

/** rpm records imported signing keys as packages named gpg-pubkey; they are not installed software. */
const GPG_PUBKEY = 'gpg-pubkey';

export const rpmLister = {
  name: 'rpm',
  // 3: packages carry their source package's name; 4: and their architectures; 5: and their module stream; 6: its file lists say which application packages it installed.
  version: 6,
  format: rpm.name,
  // The database files themselves: whiting out var/lib/rpm/Packages deletes the database, whiting out a lock file does not.
  databasePaths: DATABASES.map((db) => db.path),
  wants: (path: string): boolean => WANTED.has(path),
  list(files: LayerFiles): Package[] | undefined {
    const db = DATABASES.find((candidate) => files.has(candidate.path));
    if (!db) return undefined;
    return uniquePackages(readRecords(db, files.get(db.path)!, parseRpmHeader));
  },
  ownedFiles(files: LayerFiles): ReadonlySet<string> | undefined {
    const db = DATABASES.find((candidate) => files.has(candidate.path));
    if (!db) return undefined;
    return new Set(readRecords(db, files.get(db.path)!, rpmFilePaths).flat());
  },
} satisfies PackageLister;

/** What read makes of every header of the database; any corruption becomes an Error naming the file and record. */
function readRecords<T>(db: DatabaseFile, content: Buffer, read: (blob: Buffer) => T): T[] {
  return readBlobs(db, content).map((blob, i) => {
    try {
      return read(blob);
    } catch (err) {
      throw new Error(`${db.path}: package record ${i + 1}: ${messageOf(err)}`, { cause: err });
    }
  });
}

/** Every header blob of the database; a database that cannot be read becomes an Error naming the file. */
function readBlobs(db: DatabaseFile, content: Buffer): Buffer[] {
  try {
    return db.read(content);
  } catch (err) {
    throw new Error(`${db.path}: ${messageOf(err)}`, { cause: err });
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The source package in a SOURCERPM file name, `perl-5.38.2-506.azl3.src.rpm` → perl at
 * 5.38.2-506.azl3, with the binary's epoch (the file name carries none; rpm gives subpackages
 * their source's epoch). Names may hold dashes; version and release do not.
 */
export function sourcePackage(sourceRpm: string, epoch: number | null): { name: string; version: string } | undefined {
  const parts = sourceRpm.replace(/\.(?:no)?src\.rpm$/, '').split('-');
  if (parts.length < 3) return undefined;
  const [version, release] = parts.slice(-2);
  return { name: parts.slice(0, -2).join('-'), version: `${epoch ? `${epoch}:` : ''}${version}-${release}` };
}

/**
 * The module stream (`name:stream`) of a MODULARITYLABEL (`name:stream:version:context`): the
 * stream's builds (its version and context) all answer to its advisories. Undefined without a label
 * or for one that names no stream.
 */
export function moduleStream(label: string | null): string | undefined {
  const [name, stream] = (label ?? '').split(':');
  return name && stream ? `${name}:${stream}` : undefined;
}

/**
 * Packages as matched against advisories, in database order, each name and version once: the
 * same package installed for two architectures (multilib x86_64 + i686) is one feature, with both
 * architectures.
 */
function uniquePackages(headers: readonly RpmHeader[]): Package[] {
  const byKey = new Map<string, { pkg: Package; arches: Set<string> }>();
  for (const header of headers) {
    if (header.name === GPG_PUBKEY) continue;
    const version = evr(header);
    const key = `${header.name}\0${version}`;
    let seen = byKey.get(key);
    if (!seen) {
      const source = header.sourceRpm === null ? undefined : sourcePackage(header.sourceRpm, header.epoch);
      const module = moduleStream(header.modularityLabel);
      seen = {
        pkg: { name: header.name, version, ...(source !== undefined ? { source } : {}), ...(module !== undefined ? { module } : {}) },
        arches: new Set(),
      };
      byKey.set(key, seen);
    }
    if (header.arch !== null && header.arch !== '') seen.arches.add(header.arch);
  }
  return [...byKey.values()].map(({ pkg, arches }) => (arches.size > 0 ? { ...pkg, arches: [...arches].sort() } : pkg));
}

/**
 * `[epoch:]version-release`. rpm compares a missing epoch as 0, so an explicit 0 is dropped too:
 * one installed EVR always gets one spelling, whichever way the package was built.
 */
function evr(header: RpmHeader): string {
  const epoch = header.epoch === null || header.epoch === 0 ? '' : `${header.epoch}:`;
  return `${epoch}${header.version}-${header.release}`;
}
