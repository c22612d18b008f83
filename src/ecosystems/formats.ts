import type { PackageLister } from '../model/indexing.js';
import type { VersionFormat } from '../model/version-format.js';
import { apkLister } from './apk/lister.js';
import { apk } from './apk/version.js';
import { dpkgLister } from './dpkg/lister.js';
import { dpkg } from './dpkg/version.js';
import { composer } from './composer/version.js';
import { gem } from './gem/version.js';
import { go } from './go/version.js';
import { maven } from './maven/version.js';
import { nuget } from './nuget/version.js';
import { pep440 } from './pep440/version.js';
import { rpmLister } from './rpm/lister.js';
import { rpm } from './rpm/version.js';
import { semver } from './semver/version.js';

/**
 * The package format catalog: everything a package format (a package manager's database and
 * version ordering) contributes, as one row each. Its code lives in its folder (ecosystems/<name>/);
 * every list of formats elsewhere (the version formats writes accept, the listers the indexer runs,
 * package URL types, report locations, the names in messages and API descriptions) is derived from
 * these rows by index.ts. This file holds data only, so a test can add a row and see it everywhere.
 */
export interface PackageFormat {
  /** Orders the format's versions; its `name` is the format's name (namespace.version_format, VersionFormat on the wire). */
  readonly versions: VersionFormat;
  /** Reads the format's package database from a layer; its `format` is `versions.name`. */
  readonly lister: PackageLister;
  /** The package URL type of its packages (purl-spec: `deb` for dpkg). */
  readonly purlType: string;
  /** The file or directory in an image that holds its database, where reports point at a package's origin (SARIF). */
  readonly databaseLocation: string;
}

/** In the order the formats are named in messages, and their listers run and are reported (Clair v3 status). */
export const PACKAGE_FORMATS: readonly PackageFormat[] = [
  { versions: dpkg, lister: dpkgLister, purlType: 'deb', databaseLocation: 'var/lib/dpkg/status' },
  // The database's file name depends on the release (Packages, rpmdb.sqlite): its directory is stable.
  { versions: rpm, lister: rpmLister, purlType: 'rpm', databaseLocation: 'var/lib/rpm' },
  { versions: apk, lister: apkLister, purlType: 'apk', databaseLocation: 'lib/apk/db/installed' },
];

/**
 * The version orders of the application ecosystems (APPLICATION_ECOSYSTEMS in catalog-rows.ts says
 * which ecosystem uses which: semver for npm and crates.io). Their packages are named by the
 * ecosystem's row, not by a format's database, so these are version orders only.
 */
export const APPLICATION_VERSION_FORMATS: readonly VersionFormat[] = [semver, pep440, go, maven, gem, nuget, composer];
