import clean from 'semver/functions/clean.js';
import type { ApplicationLister, ApplicationPackage, LayerFiles, UnreadableManifest } from '../../model/indexing.js';
import { ecosystemPackageName, ecosystemRow } from '../catalog.js';
import { semver } from '../semver/version.js';

/**
 * Lists the npm packages installed in a layer: every `package.json` at the root of a package
 * directory in a `node_modules` tree, wherever that tree is (an application's
 * `usr/src/app/node_modules`, the global `usr/local/lib/node_modules`, npm's own bundled modules).
 *
 * What counts as an installed package is what npm's own tree loader counts (@npmcli/arborist
 * `load-actual.js`): the children of a `node_modules` directory are its entries, an entry starting
 * with `@` being a scope whose entries are the packages (`@babel/code-frame`); names starting with
 * `.` are skipped (`.bin`, `.package-lock.json`, `.cache`, and the `.name-XXXX` folders npm
 * leaves while it retires an old copy); and a package's own dependencies are in its `node_modules`
 * directory, not anywhere below it. So a path is one of ours when, from its first `node_modules`
 * on, it alternates `node_modules` and a package name down to `package.json`. That leaves out the
 * `package.json` files a package ships deeper inside itself (`@babel/runtime/helpers/esm`, which
 * only sets the module type, or `resolve/test/resolver/*`, test fixtures): they are not packages
 * and nothing installed them, and resolve's `test/shadowed_core/node_modules` is no dependency
 * tree either. A `package.json` outside any `node_modules` is the application itself (a project
 * root or a workspace), whose code is the image's own, not a dependency with advisories.
 *
 * pnpm's layout is followed too: it keeps each package once in its virtual store,
 * `node_modules/.pnpm/<name>@<version>/node_modules/<name>`, and links to it from the top-level
 * `node_modules`. The links are directories a layer holds as symbolic links, with no `package.json`
 * below them, so the store is where an image's pnpm-installed packages are found.
 */

const NODE_MODULES = 'node_modules';
const MANIFEST = 'package.json';
const PNPM_STORE = '.pnpm';

const NPM = ecosystemRow('npm');

/**
 * The name the package whose manifest is at path was installed under (its directory's name, with
 * its scope: `@babel/code-frame`), or undefined when path is not the manifest of an installed
 * package. Linear in the path's length: wants() runs on every file of a layer.
 */
function installedName(path: string): string | undefined {
  const segments = path.split('/');
  const last = segments.length - 1;
  if (segments[last] !== MANIFEST) return undefined;
  let i = segments.indexOf(NODE_MODULES);
  if (i < 0) return undefined;
  let name: string | undefined;
  while (i < last) {
    if (segments[i] !== NODE_MODULES) return undefined;
    i += 1;
    const entry = segments[i] as string;
    if (entry === PNPM_STORE && i + 2 < last && segments[i + 2] === NODE_MODULES) {
      i += 2;
      continue;
    }
    if (i === last || entry === '' || entry.startsWith('.')) return undefined;
    if (entry.startsWith('@')) {
      const scoped = segments[i + 1] as string;
      if (i + 1 === last || entry === '@' || scoped === '' || scoped.startsWith('.')) return undefined;
      name = `${entry}/${scoped}`;
      i += 2;
    } else {
      name = entry;
      i += 1;
    }
  }
  return name;
}

function wants(path: string): boolean {
  // Most of a layer's files are neither: skip the split for them.
  if (!path.endsWith(MANIFEST) || !path.includes(NODE_MODULES)) return false;
  return installedName(path) !== undefined;
}

type Manifest = { name: string; version: string } | { why: string };

/**
 * The name and version a manifest gives, as npm reads them. A JSON byte order mark is dropped, as
 * npm's parser (json-parse-even-better-errors) drops it.
 *
 * The name is the manifest's, not the directory's: an alias (`npm install foo@npm:bar@1.0.0`)
 * installs the registry package bar in `node_modules/foo` with bar's manifest, and bar is what
 * advisories name and what npm audit matches (by the node's `packageName`, the manifest's name).
 * Without a name (a hand-written or git dependency), the directory's is what it was installed and
 * is required as.
 *
 * The version must be one npm accepts (node-semver's loose grammar, as npm reads a package.json)
 * and is listed as npm normalises it (`semver.clean`: `v1.2.3` is 1.2.3), the form advisories and
 * package URLs use.
 */
function readManifest(content: Buffer, directoryName: string): Manifest {
  let manifest: unknown;
  try {
    manifest = JSON.parse(content.toString('utf8').replace(/^\uFEFF/, ''));
  } catch (e) {
    return { why: `not JSON: ${(e as Error).message}` };
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) return { why: 'not a JSON object' };
  const { name, version } = manifest as Record<string, unknown>;
  if (name !== undefined && name !== null && typeof name !== 'string') return { why: `name is not a string (${typeof name})` };
  if (version === undefined || version === null) return { why: 'no version' };
  if (typeof version !== 'string') return { why: `version is not a string (${typeof version})` };
  const cleaned = semver.valid(version) ? clean(version, { loose: true }) : null;
  if (cleaned === null) return { why: `version ${JSON.stringify(version)} is not a semantic version` };
  return { name: name || directoryName, version: cleaned };
}

/**
 * Each manifest lists one package at its own location, so (name, version, location) is unique
 * without a check. Sorted by location, so that the same files list the same way whatever order
 * the archive held them in.
 */
function list(files: LayerFiles): { packages: ApplicationPackage[]; unreadable: UnreadableManifest[] } {
  const packages: ApplicationPackage[] = [];
  const unreadable: UnreadableManifest[] = [];
  for (const location of [...files.keys()].sort()) {
    const directoryName = installedName(location);
    if (directoryName === undefined) continue;
    const manifest = readManifest(files.get(location) as Buffer, directoryName);
    if ('why' in manifest) {
      unreadable.push({ location, why: manifest.why });
    } else {
      packages.push({ ecosystem: NPM.namespace, name: ecosystemPackageName(NPM, manifest.name), version: manifest.version, location });
    }
  }
  return { packages, unreadable };
}

export const npmLister = {
  name: 'npm',
  version: 1,
  wants,
  list,
} satisfies ApplicationLister;
