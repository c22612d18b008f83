import { PackageURL } from 'packageurl-js';
import { distributionOf, ecosystemOf, withoutProductVariant, type ApplicationEcosystem } from '../ecosystems/catalog.js';
import { purlTypeOfFormat } from '../ecosystems/index.js';

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
  const ecosystem = ecosystemOf(pkg.namespace);
  if (ecosystem) return ecosystemPackageUrl(ecosystem, pkg.name, pkg.version);
  const type = purlTypeOfFormat(pkg.versionFormat);
  // The distribution's release: an LTSS product is sold on top of SLES 15 SP4 (sles:15.4-ltss → sles-15.4).
  const [id = pkg.namespace, release = ''] = withoutProductVariant(pkg.namespace).split(':');
  const { vendor, distro } = distributionOf(pkg.namespace)?.purl ?? { vendor: id, distro: id };
  // alpine:v3.18 → alpine-3.18; a rolling release has no version to name.
  const version = release.replace(/^v(?=\d)/, '');
  const qualifier = version === '' || version === 'rolling' ? '' : `?distro=${encode(`${distro}-${version}`)}`;
  return `pkg:${type}/${encode(vendor)}/${encode(pkg.name)}@${encode(pkg.version)}${qualifier}`;
}

/**
 * An application package's URL, `pkg:npm/%40babel/core@7.0.0`, `pkg:maven/org.example/lib@1.0`:
 * the type and the split of its name from its ecosystem's row, the spelling (each type's
 * normalisation and encoding) from packageurl-js.
 */
function ecosystemPackageUrl(ecosystem: ApplicationEcosystem, name: string, version: string): string {
  const { type, split } = ecosystem.purl;
  const at = split === 'last-slash' ? name.lastIndexOf('/') : split === 'colon' ? name.indexOf(':') : -1;
  const [namespace, base] = at > 0 ? [name.slice(0, at), name.slice(at + 1)] : [undefined, name];
  // A Java archive whose groupId nothing names (no pom.properties) has no Maven coordinate, which
  // the maven type requires: it is a generic package of that name, not a guessed coordinate.
  if (namespace === undefined && type === 'maven')
    return new PackageURL('generic', undefined, base, version, undefined, undefined).toString();
  return new PackageURL(type, namespace, base, version, undefined, undefined).toString();
}
