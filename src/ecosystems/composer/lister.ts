import { isJsonObject, manifestEntry, manifestLister, readJsonManifest, type ManifestReading } from '../application-manifests.js';
import { composer } from './version.js';

/**
 * Lists the PHP packages Composer installed in a layer, from each project's
 * `vendor/composer/installed.json` (`var/www/html/vendor/composer/installed.json`): the record
 * Composer keeps of what is in that vendor directory, which its own `composer show` and the
 * runtime `InstalledVersions` read, so it holds exactly the packages whose code is there.
 *
 * Both shapes Composer has written are read, as its InstalledFilesystemRepository reads them: a
 * JSON array of packages (Composer 1), or an object whose `packages` is that array (Composer 2,
 * with `dev` and `dev-package-names` beside it). Development packages (`require-dev`, named in
 * `dev-package-names`) are listed too: when the file names them, `composer install` ran without
 * `--no-dev` and their code is in the image like any other's, reachable by whatever the image runs.
 *
 * A package is its `name` (Packagist matches names lower-cased, as Composer does) and its
 * `version` as Composer shows it (`v1.8.1`, `7.7.0`, `dev-main`), which the composer order reads
 * as Composer does (the `v` is accepted); not `version_normalized`, which advisories do not use.
 * An entry without a name or version is reported, the file's other packages still listed.
 */

const INSTALLED = 'vendor/composer/installed.json';

function wants(path: string): boolean {
  return path === INSTALLED || path.endsWith(`/${INSTALLED}`);
}

function readInstalled(root: unknown): ManifestReading {
  const list = isJsonObject(root) && 'packages' in root ? root.packages : root;
  if (!Array.isArray(list)) return { why: 'neither an array of packages (Composer 1) nor an object with a packages array (Composer 2)' };
  return {
    entries: list.map((item: unknown, index) =>
      isJsonObject(item) ? manifestEntry(item.name, item.version, `packages[${index}]`) : { why: `packages[${index}]: not a JSON object` },
    ),
  };
}

export const composerLister = manifestLister({
  name: 'composer',
  version: 1,
  ecosystem: 'packagist',
  format: composer,
  wants,
  read: (content) => readJsonManifest(content, readInstalled),
});
