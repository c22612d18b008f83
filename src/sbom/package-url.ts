import { PackageURL } from 'packageurl-js';
import {
  APPLICATION_ECOSYSTEMS,
  DISTRIBUTIONS,
  ecosystemPackageName,
  type ApplicationEcosystem,
  type Distribution,
} from '../ecosystems/catalog.js';
import { purlTypeOfFormat, versionFormat } from '../ecosystems/index.js';
import { namespaceFromOsRelease } from '../ecosystems/osrelease/os-release.js';

/**
 * Package URLs read back into the packages Tarsier matches: the inverse of scanner/purl.ts, from
 * the same catalog rows. An application package's ecosystem is the APPLICATION_ECOSYSTEMS row of its
 * purl type, its name the purl's namespace and name joined as the row splits them. An OS package's
 * distribution is the DISTRIBUTIONS row whose package format has the purl's type and whose vendor
 * is the purl's namespace; its release is the `distro` qualifier, named by the rule that names a
 * layer from its os-release (osrelease/os-release.ts), so an SBOM of an image names the namespace a
 * scan of that image does: `distro=debian-12.4` → `debian:12`, `rhel-9.4` → `rhel:9`, `alpine-3.18.4`
 * (or Trivy's bare `3.18.4`) → `alpine:v3.18`, `sles-15.4` → `sles:15.4`, `bookworm` → `debian:12`.
 */

/** A package an SBOM names, as Tarsier matches it. */
export interface SbomPackage {
  /** The package URL as the document wrote it. */
  readonly purl: string;
  readonly namespace: string;
  readonly name: string;
  readonly version: string;
  readonly versionFormat: string;
}

/** Why a component or package was not read as a package (SkippedComponent.why says it in words). */
export const SKIP_REASONS = [
  'no-purl', // it has no package URL
  'unsupported-type', // a purl type no catalog row has (pkg:github, pkg:oci, pkg:generic)
  'unknown-distribution', // an OS purl whose vendor or distro qualifier no distribution row has
  'unknown-release', // an OS purl without a release Tarsier can name (no distro qualifier)
  'invalid-purl', // a purl that breaks its type's rules (packageurl-js: a Maven purl without a group)
  'invalid-name', // a name the ecosystem's split cannot join (a namespace where its type has none)
  'no-version',
  'invalid-version', // a version its format's order does not accept
] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

export type PackageUrlReading = { readonly package: SbomPackage } | { readonly reason: SkipReason; readonly why: string };

const ECOSYSTEMS_BY_PURL_TYPE = new Map(APPLICATION_ECOSYSTEMS.map((e) => [e.purl.type, e]));

const skip = (reason: SkipReason, why: string): PackageUrlReading => ({ reason, why });

/** What the document writes beside a package URL. */
export interface Beside {
  /** The package's name: CycloneDX `name` after its `group` and a `/`, SPDX `name`. */
  readonly name?: string | undefined;
  /** The version, for a purl that has none: CycloneDX `version`, SPDX `versionInfo`. */
  readonly version?: string | undefined;
}

/** The package a parsed package URL names, or why Tarsier cannot match it. */
export function readPackageUrl(text: string, purl: PackageURL, beside: Beside = {}): PackageUrlReading {
  const ecosystem = ECOSYSTEMS_BY_PURL_TYPE.get(purl.type);
  const found = ecosystem ? applicationPackage(ecosystem, purl, beside.name) : osPackage(purl);
  if ('reason' in found) return found;
  const version = (purl.type === 'rpm' ? rpmVersion(purl) : purl.version) ?? beside.version;
  if (version === undefined || version === '') return skip('no-version', `${text} has no version`);
  if (!versionFormat(found.versionFormat).valid(version)) {
    return skip('invalid-version', `${text}: ${JSON.stringify(version)} is not a ${found.versionFormat} version`);
  }
  return { package: { purl: text, ...found, version } };
}

type Identity = { namespace: string; name: string; versionFormat: string } | { reason: SkipReason; why: string };

/**
 * The ecosystems whose names are matched as written but whose purls packageurl-js lower-cases, as
 * the purl spec requires of npm's: there a legacy capitalised package (`JSONStream`, which OSV's
 * records name so) reads as `jsonstream` and would miss its advisories, so the name the document
 * writes beside the purl is taken when it is the same name in other case. Only where the purl was
 * lower-cased: elsewhere (a gem's, a Go module's) the purl's case is its writer's, and it stands.
 */
const CASE_FROM_DOCUMENT = new Set(APPLICATION_ECOSYSTEMS.filter((e) => e.packageNames === 'as-written' && lowersNames(e.purl.type)));

/** Whether packageurl-js lower-cases the names of this purl type (false for a type it rejects a bare name of). */
function lowersNames(type: string): boolean {
  try {
    return new PackageURL(type, undefined, 'A').name === 'a';
  } catch {
    return false;
  }
}

/**
 * The name scanner/purl.ts split into the purl's namespace and name, joined again, in the
 * ecosystem's spelling (the document's case, where CASE_FROM_DOCUMENT says so).
 */
function applicationPackage(ecosystem: ApplicationEcosystem, purl: PackageURL, documentName: string | undefined): Identity {
  const { split, type } = ecosystem.purl;
  let name: string | undefined = purl.name;
  if (purl.namespace)
    name = split === 'last-slash' ? `${purl.namespace}/${purl.name}` : split === 'colon' ? `${purl.namespace}:${purl.name}` : undefined;
  else if (split === 'colon') name = undefined;
  if (name === undefined) {
    const rule = split === 'colon' ? 'a namespace (the group) and a name' : 'a name and no namespace';
    return { reason: 'invalid-name', why: `a pkg:${type} package URL has ${rule}` };
  }
  if (CASE_FROM_DOCUMENT.has(ecosystem) && documentName !== undefined && documentName.toLowerCase() === name) name = documentName;
  return { namespace: ecosystem.namespace, name: ecosystemPackageName(ecosystem, name), versionFormat: ecosystem.versionFormat };
}

/**
 * An OS package: the distribution rows of its type and vendor (a vendor may have several: suse has
 * SLES and SLE Micro), the one the `distro` qualifier names, and its release named as os-release
 * names it. A rolling distribution needs no qualifier (scanner/purl.ts writes none for it).
 */
function osPackage(purl: PackageURL): Identity {
  const ofType = DISTRIBUTIONS.filter((d) => purlTypeOfFormat(d.versionFormat) === purl.type);
  if (ofType.length === 0) return { reason: 'unsupported-type', why: `no ecosystem or distribution has pkg:${purl.type} packages` };
  const vendor = purl.namespace?.toLowerCase();
  const rows = vendor === undefined ? ofType : ofType.filter((d) => d.purl.vendor === vendor);
  if (rows.length === 0) return { reason: 'unknown-distribution', why: `no distribution has pkg:${purl.type}/${vendor} packages` };
  const distro = purl.qualifiers?.distro?.trim();
  if (distro === undefined || distro === '') {
    const rolling = rows.filter((d) => d.naming === 'rolling');
    if (rolling.length === 1) return osIdentity(rolling[0]!, purl, '');
    return { reason: 'unknown-release', why: 'it has no distro qualifier, so its distribution release is unknown' };
  }
  const release = releaseOf(rows, distro);
  if (release === undefined)
    return { reason: 'unknown-distribution', why: `distro=${distro} names no distribution of pkg:${purl.type}/${vendor ?? ''} packages` };
  return osIdentity(release.distribution, purl, release.release);
}

function osIdentity(distribution: Distribution, purl: PackageURL, release: string): Identity {
  // A number (12, 9.4, 3.18.4) is a VERSION_ID; a word a code name (bookworm, jammy, sid), but
  // Alpine's `edge` is its VERSION_ID.
  const field = /^\d/.test(release) || release === 'edge' ? 'VERSION_ID' : 'VERSION_CODENAME';
  const namespace = namespaceFromOsRelease({ ID: distribution.osReleaseIds[0]!, [field]: release });
  if (namespace === undefined) {
    return {
      reason: 'unknown-release',
      why: `distro=${purl.qualifiers?.distro ?? ''} names no release of ${distribution.id} Tarsier can name`,
    };
  }
  return { namespace, name: purl.name, versionFormat: distribution.versionFormat };
}

/**
 * The distribution and release a distro qualifier names: `<prefix>-<release>`, the prefix being a
 * row's distro prefix, id, os-release ID or vendor (the longest that matches: `sle-micro-5.5` is SLE
 * Micro's, not SLES'; Trivy writes `redhat-9.4`); or, for a vendor with one distribution, the
 * release alone, without a hyphen (Trivy's Alpine `3.18.4`, purl-spec's `distro=jessie`): `fedora-39`
 * on a pkg:rpm/redhat purl names another distribution, not a release of Red Hat's.
 */
function releaseOf(rows: readonly Distribution[], distro: string): { distribution: Distribution; release: string } | undefined {
  const lower = distro.toLowerCase();
  const matches = rows.flatMap((d) =>
    [...new Set([d.purl.distro, d.id, ...d.osReleaseIds, d.purl.vendor])]
      .filter((prefix) => lower.startsWith(`${prefix}-`))
      .map((prefix) => ({ distribution: d, prefix })),
  );
  const longest = Math.max(...matches.map((m) => m.prefix.length));
  const best = [...new Set(matches.filter((m) => m.prefix.length === longest).map((m) => m.distribution))];
  if (best.length === 1) return { distribution: best[0]!, release: lower.slice(longest + 1) };
  if (matches.length === 0 && rows.length === 1 && !lower.includes('-')) return { distribution: rows[0]!, release: lower };
  return undefined;
}

/** rpm purls carry the epoch as a qualifier (`?epoch=1`); Tarsier's rpm versions as `1:` before the version, an epoch 0 left out. */
function rpmVersion(purl: PackageURL): string | undefined {
  const epoch = purl.qualifiers?.epoch;
  const version = purl.version;
  if (version === undefined || epoch === undefined || epoch === '0' || version.includes(':')) return version;
  return `${epoch}:${version}`;
}
