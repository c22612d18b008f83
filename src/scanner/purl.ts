import { distributionOf, withoutProductVariant } from '../ecosystems/catalog.js';
import { packageFormat } from '../ecosystems/index.js';

/**
 * Package URLs (github.com/package-url/purl-spec) for the packages the indexer finds:
 * `pkg:deb/debian/openssl@1.1.1n-0%2Bdeb10u3?distro=debian-10`. The type comes from the format
 * catalog's row of the version format (a format it does not hold is its own type), the purl
 * namespace and distro qualifier from the catalog row of its distribution (debian:10).
 */

/** purl-spec's percent-encoding: everything but unreserved characters. */
const encode = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export function packageUrl(pkg: { name: string; version: string; namespace: string; versionFormat: string }): string {
  const type = packageFormat(pkg.versionFormat)?.purlType ?? pkg.versionFormat;
  // The distribution's release: an LTSS product is sold on top of SLES 15 SP4 (sles:15.4-ltss → sles-15.4).
  const [id = pkg.namespace, release = ''] = withoutProductVariant(pkg.namespace).split(':');
  const { vendor, distro } = distributionOf(pkg.namespace)?.purl ?? { vendor: id, distro: id };
  // alpine:v3.18 → alpine-3.18; a rolling release has no version to name.
  const version = release.replace(/^v(?=\d)/, '');
  const qualifier = version === '' || version === 'rolling' ? '' : `?distro=${encode(`${distro}-${version}`)}`;
  return `pkg:${type}/${encode(vendor)}/${encode(pkg.name)}@${encode(pkg.version)}${qualifier}`;
}
