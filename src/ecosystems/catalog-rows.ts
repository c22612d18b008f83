import type { VersionFormatName } from '../model/version-format.js';

/**
 * The catalog's rows: every fact about a distribution that code elsewhere decides with, as data,
 * one row each, and every vulnerability source's. The release-file detectors name layers by them,
 * the matcher chooses formats and advisory namespaces by them, the configuration takes its updater
 * names and default URLs from them, updater/sources.ts finds the sources' code by them, the scanner
 * its package URLs. This file holds data only, so a test can add a row and see it everywhere
 * (test/ecosystems/new-distribution.test.ts); catalog.ts answers questions about the rows and is
 * what the rest of the code imports. test/ecosystems/catalog.test.ts fails when the rows, the
 * detectors and the sources disagree.
 */

/**
 * How a layer's namespace is named from its os-release (ecosystems/osrelease/os-release.ts):
 * - `major`: `<id>:<major of VERSION_ID>` (rhel:9 from 9.4);
 * - `version`: `<id>:<VERSION_ID>` (amzn:2023, sles:15.6, photon:5.0);
 * - `rolling`: `<id>:rolling` (a rolling release has no version);
 * - `debian`, `ubuntu`, `alpine`: the release rules of their own (code names, v3.18).
 */
export type ReleaseNaming = 'major' | 'version' | 'rolling' | 'debian' | 'ubuntu' | 'alpine';

export interface Distribution {
  /** The namespace prefix: `debian` in `debian:12`. */
  readonly id: string;
  /** os-release `ID` values that name it. */
  readonly osReleaseIds: readonly string[];
  readonly naming: ReleaseNaming;
  readonly versionFormat: VersionFormatName;
  /** The source (SOURCE_CATALOG) whose advisories cover it; absent: none yet (its layers are listed, not matched). */
  readonly source?: string;
  /** Matched against this distribution's advisories for the same major (CentOS → RHEL data). */
  readonly matchedAs?: string;
  /**
   * `source`: its advisories name source packages where its package database lists binaries
   * (rpm), so packages are matched by the source package they were built from.
   * `binary-and-source`: its advisories name binary packages, and some entries name a source
   * package instead (marked FixedIn.source: Red Hat's VEX names unfixed packages by their source
   * rpm), so packages are matched by their own name and, for those entries, by their source's.
   * Rebuilds matched as it (matchedAs) are matched so too: their packages go to its namespaces.
   */
  readonly advisoryNames?: 'source' | 'binary-and-source';
  /**
   * Its advisories scope a module stream's fixes to that stream (FixedIn.module: Red Hat's OVAL),
   * so its packages are matched with the module stream they were built in (their modularity
   * label), and a module's fixes never reach packages from outside it, nor the others a module's
   * package. Rebuilds matched as it keep their modularity labels and are matched so too.
   */
  readonly moduleStreams?: true;
  /** Package URL namespace (the vendor) and `distro` qualifier prefix: pkg:rpm/redhat/…?distro=rhel-9. */
  readonly purl: { readonly vendor: string; readonly distro: string };
  /**
   * Its namespaces may name a product sold on top of a release after a hyphen (`sles:15.4-ltss`,
   * see suse/products.ts); the release, which the purl's `distro` qualifier names, is the part
   * before it.
   */
  readonly productVariants?: true;
  /**
   * How a one-line release file names it where os-release does not (Red Hat's family before
   * os-release, or an image without it; ecosystems/osrelease/redhat-release.ts): `lines` match the
   * text and capture the namespace version, in order; `file` is its own file, read before the shared
   * etc/redhat-release and etc/system-release, which its relatives fill with a copy of theirs (or,
   * on Oracle Linux, with Red Hat's text).
   */
  readonly releaseFile?: { readonly file?: string; readonly lines: readonly RegExp[] };
}

export const DISTRIBUTIONS: readonly Distribution[] = [
  {
    id: 'debian',
    osReleaseIds: ['debian'],
    naming: 'debian',
    versionFormat: 'dpkg',
    source: 'debian',
    purl: { vendor: 'debian', distro: 'debian' },
  },
  {
    id: 'ubuntu',
    osReleaseIds: ['ubuntu'],
    naming: 'ubuntu',
    versionFormat: 'dpkg',
    source: 'ubuntu',
    purl: { vendor: 'ubuntu', distro: 'ubuntu' },
  },
  {
    id: 'alpine',
    osReleaseIds: ['alpine'],
    naming: 'alpine',
    versionFormat: 'apk',
    source: 'alpine',
    purl: { vendor: 'alpine', distro: 'alpine' },
  },
  {
    id: 'wolfi',
    osReleaseIds: ['wolfi'],
    naming: 'rolling',
    versionFormat: 'apk',
    source: 'wolfi',
    purl: { vendor: 'wolfi', distro: 'wolfi' },
  },
  // Chainguard's images say ID=chainguard; their advisories are Wolfi's feed, under wolfi:rolling.
  {
    id: 'chainguard',
    osReleaseIds: ['chainguard'],
    naming: 'rolling',
    versionFormat: 'apk',
    matchedAs: 'wolfi',
    purl: { vendor: 'chainguard', distro: 'chainguard' },
  },
  {
    id: 'rhel',
    osReleaseIds: ['rhel'],
    naming: 'major',
    versionFormat: 'rpm',
    source: 'rhel',
    // Red Hat's VEX documents name packages without a fix by their source rpm (vim for vim-minimal).
    advisoryNames: 'binary-and-source',
    moduleStreams: true,
    purl: { vendor: 'redhat', distro: 'rhel' },
    releaseFile: { lines: [/^Red Hat Enterprise Linux\b.*? release (\d+)/i] },
  },
  // Rebuilds of RHEL: Red Hat's advisories cover them; their layers keep their own namespace.
  {
    id: 'centos',
    osReleaseIds: ['centos'],
    naming: 'major',
    versionFormat: 'rpm',
    matchedAs: 'rhel',
    purl: { vendor: 'centos', distro: 'centos' },
    releaseFile: { file: 'etc/centos-release', lines: [/^CentOS (?:Linux |Stream )?release (\d+)/i] },
  },
  {
    id: 'rocky',
    osReleaseIds: ['rocky'],
    naming: 'major',
    versionFormat: 'rpm',
    matchedAs: 'rhel',
    purl: { vendor: 'rocky', distro: 'rocky' },
    releaseFile: { file: 'etc/rocky-release', lines: [/^Rocky Linux release (\d+)/i] },
  },
  {
    id: 'almalinux',
    osReleaseIds: ['almalinux'],
    naming: 'major',
    versionFormat: 'rpm',
    matchedAs: 'rhel',
    purl: { vendor: 'almalinux', distro: 'almalinux' },
    releaseFile: { file: 'etc/almalinux-release', lines: [/^AlmaLinux release (\d+)/i] },
  },
  {
    id: 'fedora',
    osReleaseIds: ['fedora'],
    naming: 'major',
    versionFormat: 'rpm',
    purl: { vendor: 'fedora', distro: 'fedora' },
    releaseFile: { file: 'etc/fedora-release', lines: [/^Fedora release (\d+)/i] },
  },
  {
    id: 'oracle',
    osReleaseIds: ['ol'],
    naming: 'major',
    versionFormat: 'rpm',
    source: 'oracle',
    purl: { vendor: 'oracle', distro: 'ol' },
    releaseFile: { file: 'etc/oracle-release', lines: [/^Oracle Linux (?:Server )?release (\d+)/i] },
  },
  {
    id: 'amzn',
    osReleaseIds: ['amzn'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'amzn',
    purl: { vendor: 'amazon', distro: 'amzn' },
    // The Amazon Linux AMI's releases are named YYYY.MM (2018.03); it writes etc/system-release.
    releaseFile: { lines: [/^Amazon Linux AMI release (\d+\.\d+)/i, /^Amazon Linux release (\d+)/i] },
  },
  {
    id: 'sles',
    osReleaseIds: ['sles'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'suse',
    purl: { vendor: 'suse', distro: 'sles' },
    productVariants: true,
  },
  // SLE Micro 5 says ID=sle-micro; its successor, SUSE Linux Micro 6, says ID=sl-micro.
  {
    id: 'sle-micro',
    osReleaseIds: ['sle-micro', 'sl-micro'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'suse',
    purl: { vendor: 'suse', distro: 'sle-micro' },
  },
  {
    id: 'opensuse-leap',
    // Before Leap 15, os-release said ID=opensuse for Leap and Tumbleweed alike: os-release.ts tells them apart.
    osReleaseIds: ['opensuse-leap'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'suse',
    purl: { vendor: 'opensuse', distro: 'opensuse-leap' },
  },
  {
    id: 'opensuse-tumbleweed',
    osReleaseIds: ['opensuse-tumbleweed'],
    naming: 'rolling',
    versionFormat: 'rpm',
    purl: { vendor: 'opensuse', distro: 'opensuse-tumbleweed' },
  },
  {
    id: 'photon',
    osReleaseIds: ['photon'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'photon',
    purl: { vendor: 'photon', distro: 'photon' },
  },
  {
    id: 'azurelinux',
    osReleaseIds: ['azurelinux'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'azurelinux',
    // Microsoft's OVAL names source packages: curl's advisory covers curl-libs too.
    advisoryNames: 'source',
    purl: { vendor: 'azurelinux', distro: 'azurelinux' },
  },
  // CBL-Mariner, Azure Linux's name before 3.0.
  {
    id: 'mariner',
    osReleaseIds: ['mariner'],
    naming: 'version',
    versionFormat: 'rpm',
    source: 'azurelinux',
    advisoryNames: 'source',
    purl: { vendor: 'mariner', distro: 'mariner' },
  },
];

/** A vulnerability source: its name (updater.enabledupdaters, updater.sources.<name>.url) and default upstream location. */
/**
 * How an application ecosystem's package names are matched: as written, lower-cased (registries
 * whose names are case-insensitive), or PEP 503's normal form (PyPI: lower case, runs of `-`, `_`
 * and `.` as one `-`).
 */
export type PackageNaming = 'as-written' | 'lower-case' | 'pep503';

/**
 * How a package name splits into a package URL's namespace and name: at its last `/` (npm's
 * `@scope/name`, a Go module path, Composer's `vendor/name`), at its `:` (Maven's
 * `groupId:artifactId`), or not at all.
 */
export type PurlNameSplit = 'last-slash' | 'colon' | 'none';

/**
 * An application ecosystem: a language's package registry, whose packages are matched under one
 * namespace whatever image or distribution they are found in.
 */
export interface ApplicationEcosystem {
  /** The namespace: OSV's name for the ecosystem, lower-cased (npm, pypi, crates.io). */
  readonly namespace: string;
  /** OSV's name for it, as records name packages' ecosystems and OSV.dev names its archives' folders. */
  readonly osvName: string;
  /** Its version order (formats.ts APPLICATION_VERSION_FORMATS). */
  readonly versionFormat: VersionFormatName;
  /** The source (SOURCE_CATALOG) whose records cover it. */
  readonly source: string;
  readonly packageNames: PackageNaming;
  /** Package URL type, and how a name splits into the purl's namespace and name. */
  readonly purl: { readonly type: string; readonly split: PurlNameSplit };
}

export const APPLICATION_ECOSYSTEMS: readonly ApplicationEcosystem[] = [
  {
    namespace: 'npm',
    osvName: 'npm',
    versionFormat: 'semver',
    source: 'osv',
    packageNames: 'as-written',
    purl: { type: 'npm', split: 'last-slash' },
  },
  {
    namespace: 'pypi',
    osvName: 'PyPI',
    versionFormat: 'pep440',
    source: 'osv',
    packageNames: 'pep503',
    purl: { type: 'pypi', split: 'none' },
  },
  // Module paths (golang.org/x/net), and the standard library as `stdlib`.
  {
    namespace: 'go',
    osvName: 'Go',
    versionFormat: 'go',
    source: 'osv',
    packageNames: 'as-written',
    purl: { type: 'golang', split: 'last-slash' },
  },
  {
    namespace: 'maven',
    osvName: 'Maven',
    versionFormat: 'maven',
    source: 'osv',
    packageNames: 'as-written',
    purl: { type: 'maven', split: 'colon' },
  },
  {
    namespace: 'rubygems',
    osvName: 'RubyGems',
    versionFormat: 'gem',
    source: 'osv',
    packageNames: 'as-written',
    purl: { type: 'gem', split: 'none' },
  },
  {
    namespace: 'crates.io',
    osvName: 'crates.io',
    versionFormat: 'semver',
    source: 'osv',
    packageNames: 'as-written',
    purl: { type: 'cargo', split: 'none' },
  },
  {
    namespace: 'nuget',
    osvName: 'NuGet',
    versionFormat: 'nuget',
    source: 'osv',
    packageNames: 'lower-case',
    purl: { type: 'nuget', split: 'none' },
  },
  {
    namespace: 'packagist',
    osvName: 'Packagist',
    versionFormat: 'composer',
    source: 'osv',
    packageNames: 'lower-case',
    purl: { type: 'composer', split: 'last-slash' },
  },
];

export interface SourceEntry {
  readonly name: string;
  /**
   * Its code: the folder under ecosystems/ whose `updater.ts` exports it, by this name, in its
   * `sources` (a folder may hold several: alpine/ has Alpine's and Wolfi's). updater/sources.ts
   * loads it from there; nothing else lists the sources.
   */
  readonly folder: string;
  readonly url: string;
  /**
   * What it brings: advisories of distribution releases (vulnerabilities), or context about
   * vulnerabilities others list (NVD's scores: enrichment; EPSS and KEV: risk). Only the first is
   * vulnerability data: the others never make an image's data known, or fresh.
   */
  readonly kind: 'vulnerabilities' | 'enrichment' | 'risk';
  /**
   * Another feed of the same distributions as the named source, enabled instead of it (never both:
   * their records would be reported twice). Not enabled by default.
   */
  readonly alternativeTo?: string;
  /** Other names Clair's configurations give it in `updater.enabledupdaters` (`amzn1`, `amzn2` → amzn). */
  readonly clairNames?: readonly string[];
  /** Its configuration may choose which application ecosystems it reads (`updater.sources.<name>.ecosystems`). */
  readonly takesEcosystems?: true;
}

/**
 * Every source, in the order a run visits them: NVD after the distributions, so its data lands on
 * the vulnerabilities the others just wrote; then the risk context (EPSS, KEV), kept per CVE.
 */
export const SOURCE_CATALOG: readonly SourceEntry[] = [
  { name: 'debian', folder: 'debian', kind: 'vulnerabilities', url: 'https://security-tracker.debian.org/tracker/data/json' },
  { name: 'ubuntu', folder: 'ubuntu', kind: 'vulnerabilities', url: 'https://security-metadata.canonical.com/oval/' },
  { name: 'alpine', folder: 'alpine', kind: 'vulnerabilities', url: 'https://secdb.alpinelinux.org/' },
  { name: 'wolfi', folder: 'alpine', kind: 'vulnerabilities', url: 'https://packages.wolfi.dev/os/security.json' },
  {
    name: 'rhel',
    folder: 'rhel',
    kind: 'vulnerabilities',
    url: 'https://security.access.redhat.com/data/oval/v2/',
    clairNames: ['redhat'],
  },
  // Red Hat's current feed (CSAF VEX): records per CVE with fix states, where OVAL v2 has them per advisory.
  {
    name: 'rhel-vex',
    folder: 'rhel',
    kind: 'vulnerabilities',
    url: 'https://security.access.redhat.com/data/csaf/v2/vex/',
    alternativeTo: 'rhel',
  },
  { name: 'oracle', folder: 'oracle', kind: 'vulnerabilities', url: 'https://linux.oracle.com/security/oval/' },
  { name: 'amzn', folder: 'amazon', kind: 'vulnerabilities', url: 'https://cdn.amazonlinux.com/', clairNames: ['amzn1', 'amzn2'] },
  {
    name: 'suse',
    folder: 'suse',
    kind: 'vulnerabilities',
    url: 'https://ftp.suse.com/pub/projects/security/oval/',
    clairNames: ['opensuse'],
  },
  { name: 'photon', folder: 'photon', kind: 'vulnerabilities', url: 'https://packages.broadcom.com/photon/photon_cve_metadata/' },
  {
    name: 'azurelinux',
    folder: 'azurelinux',
    kind: 'vulnerabilities',
    url: 'https://raw.githubusercontent.com/microsoft/AzureLinuxVulnerabilityData/main/',
  },
  // OSV.dev's per-ecosystem archives (`<Ecosystem>/all.zip`) of every application ecosystem's advisories.
  {
    name: 'osv',
    folder: 'osv',
    kind: 'vulnerabilities',
    url: 'https://osv-vulnerabilities.storage.googleapis.com/',
    takesEcosystems: true,
  },
  { name: 'nvd', folder: 'nvd', kind: 'enrichment', url: 'https://nvd.nist.gov/feeds/json/cve/2.0/' },
  // The locations name the upstream file itself (FIRST's current scores; CISA's catalog).
  { name: 'epss', folder: 'epss', kind: 'risk', url: 'https://epss.empiricalsecurity.com/epss_scores-current.csv.gz' },
  { name: 'kev', folder: 'kev', kind: 'risk', url: 'https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json' },
];
