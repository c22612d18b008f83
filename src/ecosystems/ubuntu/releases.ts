/**
 * Ubuntu release codename → version (the release part of its namespace, `ubuntu:<version>`), as a
 * static table. Canonical publishes one OVAL file per codename
 * (`com.ubuntu.<codename>.cve.oval.xml.bz2`); the active series are listed by
 * https://api.launchpad.net/1.0/ubuntu/series. A new release needs a line here.
 */
export const UBUNTU_RELEASES: Readonly<Record<string, string>> = Object.freeze({
  lucid: '10.04',
  maverick: '10.10',
  natty: '11.04',
  oneiric: '11.10',
  precise: '12.04',
  quantal: '12.10',
  raring: '13.04',
  saucy: '13.10',
  trusty: '14.04',
  utopic: '14.10',
  vivid: '15.04',
  wily: '15.10',
  xenial: '16.04',
  yakkety: '16.10',
  zesty: '17.04',
  artful: '17.10',
  bionic: '18.04',
  cosmic: '18.10',
  disco: '19.04',
  eoan: '19.10',
  focal: '20.04',
  groovy: '20.10',
  hirsute: '21.04',
  impish: '21.10',
  jammy: '22.04',
  kinetic: '22.10',
  lunar: '23.04',
  mantic: '23.10',
  noble: '24.04',
  oracular: '24.10',
  plucky: '25.04',
  questing: '25.10',
});

/** `ubuntu:<version>` for a known codename (e.g. jammy → ubuntu:22.04), undefined for any other. */
export function ubuntuNamespace(codename: string): string | undefined {
  return Object.hasOwn(UBUNTU_RELEASES, codename) ? `ubuntu:${UBUNTU_RELEASES[codename]}` : undefined;
}

/** The codename of a version (22.04 → jammy), undefined when unknown. */
export function ubuntuCodename(version: string): string | undefined {
  return Object.keys(UBUNTU_RELEASES).find((codename) => UBUNTU_RELEASES[codename] === version);
}
