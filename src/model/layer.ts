import type { Package } from './indexing.js';
import type { VersionFormatName } from './version-format.js';

/**
 * A layer's own package database of one format: held whole ('present': its packages replace those
 * inherited), held in part ('added': files that each add packages to those inherited, as distroless
 * images add one dpkg status.d file per layer), or deleted by a whiteout.
 */
export type PackageDatabase =
  { readonly state: 'present' | 'added'; readonly packages: readonly Package[] } | { readonly state: 'deleted' };

export type PackageDatabaseState = PackageDatabase['state'];

/**
 * What one layer's own files say, whatever its parent holds. A format missing from packageDbs
 * means the layer does not touch that database: its parent's packages of that format carry on.
 */
export interface LayerScan {
  /** The namespace the layer's release files name (e.g. debian:12), if any. */
  readonly namespace: string | null;
  readonly packageDbs: Readonly<Record<VersionFormatName, PackageDatabase>>;
}
