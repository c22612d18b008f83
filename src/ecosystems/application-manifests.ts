import type { ApplicationFindings, ApplicationLister, ApplicationPackage, LayerFiles, UnreadableManifest } from '../model/indexing.js';
import type { VersionFormat } from '../model/version-format.js';
import { ecosystemPackageName, ecosystemRow, type ApplicationEcosystem } from './catalog.js';

/**
 * What the application listers that read one manifest file into several packages share (Composer's
 * installed.json, .NET's deps.json, Cargo.lock, and a gemspec's one package; and the manifest a
 * program carries, cargo auditable's audit data): walking the wanted files in a stable order,
 * naming packages as their ecosystem matches names, and refusing the versions the ecosystem's
 * order cannot read, so that a package is never matched on a version its comparator would misplace.
 */

/** A package as a manifest writes it, before its ecosystem's naming and version rules are applied. */
export interface ManifestEntry {
  readonly name: string;
  readonly version: string;
}

/** An entry of a manifest that names no package the lister can read, and why. */
export interface UnreadableEntry {
  readonly why: string;
}

/**
 * What one manifest holds: its entries, each a package or why it is none (a manifest whose one
 * entry lacks a version still lists the others); or, when the file as a whole cannot be read, why
 * not.
 */
export type ManifestReading = { readonly entries: readonly (ManifestEntry | UnreadableEntry)[] } | { readonly why: string };

/**
 * The package an entry's name and version fields give, or why they give none. label names the
 * entry in the reason when it has no name (`packages[3]`).
 */
export function manifestEntry(name: unknown, version: unknown, label: string): ManifestEntry | UnreadableEntry {
  if (typeof name !== 'string' || name === '') return { why: `${label}: no name` };
  if (typeof version !== 'string') return { why: `${name}: no version` };
  return { name, version };
}

/**
 * What read makes of a JSON manifest's value, or why the manifest is not JSON. A byte order mark is
 * dropped first: the tools that write these files on Windows (MSBuild's deps.json) may start them
 * with one, and the readers that consume them (System.Text.Json, Composer's JsonFile) accept it.
 */
export function readJsonManifest(content: Buffer, read: (value: unknown) => ManifestReading): ManifestReading {
  let value: unknown;
  try {
    value = JSON.parse(content.toString('utf8').replace(/^\uFEFF/, ''));
  } catch (e) {
    return { why: `not JSON: ${(e as Error).message}` };
  }
  return read(value);
}

/** Whether value is a JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The packages of every wanted manifest in files, read by read, each listed as listManifest says.
 * Locations are visited in sorted order, so the same files list the same way whatever order the
 * archive held them in.
 */
function listManifests(
  files: LayerFiles,
  ecosystem: ApplicationEcosystem,
  format: VersionFormat,
  wants: (path: string) => boolean,
  read: (content: Buffer, location: string) => ManifestReading,
): ApplicationFindings {
  const packages: ApplicationPackage[] = [];
  const unreadable: UnreadableManifest[] = [];
  for (const location of [...files.keys()].sort()) {
    if (!wants(location)) continue;
    const found = listManifest(location, read(files.get(location) as Buffer, location), ecosystem, format);
    packages.push(...found.packages);
    unreadable.push(...found.unreadable);
  }
  return { packages, unreadable };
}

/**
 * The packages of one manifest (or of the manifest a program carries), read into reading, at
 * location. A package it lists twice (same name and version once its ecosystem's naming rule is
 * applied) is listed once. An entry whose version format rejects its version, or whose version is
 * blank (RubyGems would read one as `0`, but a manifest that writes none states no version), is
 * reported as unreadable, with the package it names, and not listed.
 */
export function listManifest(
  location: string,
  reading: ManifestReading,
  ecosystem: ApplicationEcosystem,
  format: VersionFormat,
): ApplicationFindings {
  if ('why' in reading) return { packages: [], unreadable: [{ location, why: reading.why }] };
  const packages: ApplicationPackage[] = [];
  const unreadable: UnreadableManifest[] = [];
  const seen = new Set<string>();
  for (const entry of reading.entries) {
    if ('why' in entry) {
      unreadable.push({ location, why: entry.why });
      continue;
    }
    if (!format.valid(entry.version) || entry.version.trim() === '') {
      unreadable.push({ location, why: `${entry.name}: version ${JSON.stringify(entry.version)} is not a ${format.name} version` });
      continue;
    }
    const name = ecosystemPackageName(ecosystem, entry.name);
    const key = `${name}\0${entry.version}`;
    if (seen.has(key)) continue;
    seen.add(key);
    packages.push({ ecosystem: ecosystem.namespace, name, version: entry.version, location });
  }
  return { packages, unreadable };
}

/** What makes a lister of one kind of manifest: its ApplicationLister fields and how to read one manifest. */
export interface ManifestKind {
  readonly name: string;
  readonly version: number;
  /** The namespace of its ecosystem's catalog row (`packagist`). */
  readonly ecosystem: string;
  /** The ecosystem's version order, whose valid() decides what is a version. */
  readonly format: VersionFormat;
  wants(path: string): boolean;
  read(content: Buffer, location: string): ManifestReading;
}

/** The application lister of a kind of manifest, listing as listManifests says. */
export function manifestLister(kind: ManifestKind): ApplicationLister {
  const ecosystem = ecosystemRow(kind.ecosystem);
  return {
    name: kind.name,
    version: kind.version,
    wants: kind.wants,
    list: (files) => listManifests(files, ecosystem, kind.format, kind.wants, kind.read),
  };
}
