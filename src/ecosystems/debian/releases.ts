/**
 * Debian release codename → the release part of its namespace (`debian:<release>`), as a static
 * table (vunnel's approach; claircore discovers codenames from deb.debian.org/debian/dists/ instead).
 * A codename missing here is skipped by the tracker parser and reported, so a new release shows up
 * in the updater's summary until a line is added.
 */
export const DEBIAN_RELEASES: Readonly<Record<string, string>> = Object.freeze({
  squeeze: '6',
  wheezy: '7',
  jessie: '8',
  stretch: '9',
  buster: '10',
  bullseye: '11',
  bookworm: '12',
  trixie: '13',
  forky: '14',
  duke: '15',
  sid: 'unstable',
  unstable: 'unstable',
});

/** `debian:<release>` for a known codename, undefined for any other. */
export function debianNamespace(codename: string): string | undefined {
  return Object.hasOwn(DEBIAN_RELEASES, codename) ? `debian:${DEBIAN_RELEASES[codename]}` : undefined;
}
