import { unprocessable } from '../errors.js';
import { decides } from '../model/fixes.js';
import type { InstalledVersion, Matching, StoredFix } from '../model/matching.js';
import { distributionOf, ecosystemOf } from './catalog.js';
import { knownNamespaceFormat, matchNamespace, versionFormat } from './index.js';

/** The matching rules, from the catalog and the version formats: what the store links with. */
export const MATCHING: Matching = {
  match(format) {
    const { compare } = versionFormat(format);
    const affects = (fix: StoredFix, installed: InstalledVersion): boolean => {
      if (fix.fix_state === 'not_affected' || !onArchitecture(fix, installed)) return false;
      // A module stream's entry for its packages, any other for packages outside every module.
      if ((fix.module ?? '') !== (installed.module ?? '')) return false;
      const version = versionFor(fix, installed);
      if (fix.affected_above != null && compare(version, fix.affected_above) <= 0) return false;
      if (fix.affected_from != null && compare(version, fix.affected_from) < 0) return false;
      if (fix.fixed_version !== null) return compare(version, fix.fixed_version) < 0;
      return fix.affected_through == null || compare(version, fix.affected_through) <= 0;
    };
    const asFix = (f: StoredFix) => ({ version: f.fixed_version, state: f.fix_state });
    return (fixes, installed) => {
      let decisive: (typeof fixes)[number] | undefined;
      for (const fix of fixes) {
        if (affects(fix, installed) && (decisive === undefined || decides(compare, asFix(fix), asFix(decisive)))) decisive = fix;
      }
      return decisive;
    };
  },
  namespaceFormat: knownNamespaceFormat,
  isApplicationNamespace: (namespace) => ecosystemOf(namespace) !== undefined,
  advisoryNamespace(layerNamespace, format) {
    if (layerNamespace === null) {
      throw unprocessable(
        `the layer holds a ${format} package database, but neither it nor its parents hold a release file of a supported operating system (etc/os-release, etc/alpine-release, ...), so its packages cannot be matched`,
      );
    }
    const name = matchNamespace(layerNamespace);
    // A database of another format than the distribution's has no advisories to match against here.
    return knownNamespaceFormat(name) === format ? name : undefined;
  },
  bySource(layerNamespace) {
    if (layerNamespace === null || distributionOf(matchNamespace(layerNamespace))?.advisoryNames !== 'source') return undefined;
    return (pkg) => pkg.source ?? { name: pkg.name, version: pkg.version };
  },
  sourceEntries(advisoryNamespace) {
    return distributionOf(advisoryNamespace)?.advisoryNames === 'binary-and-source';
  },
  moduleStreams(advisoryNamespace) {
    return distributionOf(advisoryNamespace)?.moduleStreams === true;
  },
};

/**
 * The version an entry is compared with: an entry naming a source package gives the source's
 * version (an rpm subpackage may carry a version of its own: perl's modules), so it is compared
 * with the version of the source the package was built from; with the package's own when that is
 * not known. In RHEL the two are the same for nearly every package.
 */
function versionFor(fix: StoredFix, installed: InstalledVersion): string {
  return fix.source && installed.source_version ? installed.source_version : installed.version;
}

/**
 * Whether an entry limited to some architectures applies to a package installed for others: it
 * does when it names one of them (a multilib package is affected when one of its copies is), and
 * when either side says nothing (an entry for every architecture; a package indexed before its
 * architecture was recorded), so that what is not known never hides a vulnerability.
 */
function onArchitecture(fix: StoredFix, installed: InstalledVersion): boolean {
  if (!fix.arches || fix.arches.length === 0 || installed.arches.length === 0) return true;
  return installed.arches.some((arch) => fix.arches!.includes(arch));
}
