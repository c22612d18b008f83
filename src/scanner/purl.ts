/**
 * Package URLs (github.com/package-url/purl-spec) for the packages the indexer finds:
 * `pkg:deb/debian/openssl@1.1.1n-0%2Bdeb10u3?distro=debian-10`. The type comes from the version
 * format, the purl namespace and distro qualifier from the package's namespace (debian:10).
 */

const TYPES: Readonly<Record<string, string>> = { dpkg: 'deb', rpm: 'rpm', apk: 'apk' };

/**
 * Tarsier namespace id → [purl namespace (the vendor, as purl-spec's examples and Trivy/Syft name
 * them), distro qualifier prefix]. An id not listed keeps its own name for both.
 */
const DISTRIBUTIONS: Readonly<Record<string, readonly [string, string]>> = {
  debian: ['debian', 'debian'],
  ubuntu: ['ubuntu', 'ubuntu'],
  alpine: ['alpine', 'alpine'],
  wolfi: ['wolfi', 'wolfi'],
  chainguard: ['chainguard', 'chainguard'],
  rhel: ['redhat', 'rhel'],
  centos: ['centos', 'centos'],
  rocky: ['rocky', 'rocky'],
  almalinux: ['almalinux', 'almalinux'],
  fedora: ['fedora', 'fedora'],
  oracle: ['oracle', 'ol'],
  amzn: ['amazon', 'amzn'],
  sles: ['suse', 'sles'],
  'opensuse-leap': ['opensuse', 'opensuse-leap'],
  'opensuse-tumbleweed': ['opensuse', 'opensuse-tumbleweed'],
};

/** purl-spec's percent-encoding: everything but unreserved characters. */
const encode = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export function packageUrl(pkg: { name: string; version: string; namespace: string; versionFormat: string }): string {
  const type = TYPES[pkg.versionFormat] ?? pkg.versionFormat;
  const [id = pkg.namespace, release = ''] = pkg.namespace.split(':');
  const [vendor, distro] = DISTRIBUTIONS[id] ?? [id, id];
  // alpine:v3.18 → alpine-3.18; a rolling release has no version to name.
  const version = release.replace(/^v(?=\d)/, '');
  const qualifier = version === '' || version === 'rolling' ? '' : `?distro=${encode(`${distro}-${version}`)}`;
  return `pkg:${type}/${encode(vendor)}/${encode(pkg.name)}@${encode(pkg.version)}${qualifier}`;
}
