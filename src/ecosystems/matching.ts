import { unprocessable } from '../errors.js';
import type { Matching } from '../model/matching.js';
import { distributionOf } from './catalog.js';
import { knownNamespaceFormat, matchNamespace, versionFormat } from './index.js';

/** The matching rules, from the catalog and the version formats: what the store links with. */
export const MATCHING: Matching = {
  affects(format) {
    const { compare } = versionFormat(format);
    return (fix, installed) =>
      fix.fix_state !== 'not_affected' && (fix.fixed_version === null || compare(installed, fix.fixed_version) < 0);
  },
  namespaceFormat: knownNamespaceFormat,
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
};
