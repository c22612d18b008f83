/**
 * SLES products: a service pack and the variants sold on top of it (LTSS, BCL), which SUSE's OVAL
 * treats as products of their own ("SUSE Linux Enterprise Server 15 SP4-LTSS is installed",
 * tested as `sles-ltss-release is ==15.4`). A variant is an extension: its system keeps
 * `sles-release` and adds the variant's release package, so both the service pack's criteria and
 * the variant's hold there, while a system without the variant sees only the service pack's.
 *
 * Namespaces: `sles:15.4` for the service pack, `sles:15.4-ltss` for it with LTSS. The OVAL parser
 * writes the service pack's entries to both and the variant's to the variant's only; this detector
 * names a layer by the release packages of its rpm database, which every layer that changes
 * packages holds whole (os-release alone cannot tell: it is the same with and without LTSS).
 */
import type { LayerFiles, NamespaceDetector, Package } from '../../model/indexing.js';
import type { LayerScan } from '../../model/layer.js';
import { parseRpmEvr } from '../rpm/version.js';

/**
 * The variants a layer is named by: the suffix of the OVAL product ("SP4-LTSS") and its release
 * package, compared case-insensitively (SLE 12 spells it `SLES-LTSS-release`). Variants the
 * OVAL names without a release package listed here (TERADATA, …) are written under their own
 * namespace and matched by no layer.
 */
const VARIANT_RELEASES: ReadonlyMap<string, string> = new Map([
  ['sles-ltss-release', 'ltss'],
  ['sles_bcl-release', 'bcl'],
]);

/** The release package of a plain SLES service pack: its version names the service pack (15.4; 15 for GA). */
export const PLAIN_RELEASE_PACKAGE = 'sles-release';

/** `sles:<release>` for the plain product, `sles:<release>-<variant>` with a variant (`LTSS` → `-ltss`). */
export function slesNamespace(release: string, variant?: string): string {
  return variant === undefined ? `sles:${release}` : `sles:${release}-${variant.toLowerCase()}`;
}

/**
 * The SLES product a package list says is installed: `sles-release` names the service pack by its
 * version (15.4; 15 for GA, as the OVAL tests it), and a variant's release package of the same
 * version qualifies it. Undefined without `sles-release`.
 */
function slesProductOf(packages: readonly Package[]): string | undefined {
  const versionOf = (p: Package): string | undefined => parseRpmEvr(p.version)?.version;
  const release = packages.find((p) => p.name === PLAIN_RELEASE_PACKAGE);
  const version = release && versionOf(release);
  if (version === undefined || !/^\d+(?:\.\d+)?$/.test(version)) return undefined;
  const variants = packages
    .flatMap((p) => {
      const variant = VARIANT_RELEASES.get(p.name.toLowerCase());
      return variant !== undefined && versionOf(p) === version ? [variant] : [];
    })
    .sort();
  return slesNamespace(version, variants[0]);
}

/**
 * Names a layer whose rpm database lists `sles-release`. It precedes os-release: an LTSS image's
 * os-release is a plain service pack's.
 */
export const suseProductDetector = {
  name: 'suse-products',
  version: 1,
  // The rpm database is wanted by the rpm lister; its packages are handed over listed.
  wants: () => false,
  detect(_files: LayerFiles, databases?: LayerScan['packageDbs']): string | undefined {
    const rpm = databases?.rpm;
    return rpm && rpm.state === 'present' ? slesProductOf(rpm.packages) : undefined;
  },
} satisfies NamespaceDetector;
