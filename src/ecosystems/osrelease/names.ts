/**
 * How release numbers become namespace names (`debian:12`, `ubuntu:22.04`, `alpine:v3.19`,
 * `rhel:9`, `amzn:2023`): one function per naming rule, shared by the detectors.
 */

/** Debian code names, including the ones of testing releases that have no VERSION_ID yet. */
const DEBIAN_RELEASES: Readonly<Record<string, string>> = {
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
};

const UBUNTU_RELEASES: Readonly<Record<string, string>> = {
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
};

function lookup(table: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** `debian:<n>` (or `debian:unstable`) for a Debian code name such as `bookworm` or `sid`. */
export function debianFromCodename(codename: string): string | undefined {
  const release = lookup(DEBIAN_RELEASES, codename.toLowerCase());
  return release === undefined ? undefined : `debian:${release}`;
}

/** `ubuntu:<X.Y>` for an Ubuntu code name such as `jammy`. */
export function ubuntuFromCodename(codename: string): string | undefined {
  const release = lookup(UBUNTU_RELEASES, codename.toLowerCase());
  return release === undefined ? undefined : `ubuntu:${release}`;
}

/** `<distribution>:<major>` from a version such as `9.4`, `7` or `8.10`. */
export function withMajor(distribution: string, version: string): string | undefined {
  const major = /^(\d+)(?:\.|$)/.exec(version.trim())?.[1];
  return major === undefined ? undefined : `${distribution}:${major}`;
}

/** `<distribution>:<version>` when the version is a plain `N` or `N.M` (Amazon, SUSE, Ubuntu keep it whole). */
export function withVersion(distribution: string, version: string): string | undefined {
  const v = version.trim();
  return /^\d+(?:\.\d+)?$/.test(v) ? `${distribution}:${v}` : undefined;
}

/**
 * `alpine:v<major>.<minor>` from `3.19.1`, or `alpine:edge` for edge, whose release files carry
 * the next version with an `_alpha<date>` suffix (`3.19_alpha20230901`).
 */
export function alpineFromVersion(version: string): string | undefined {
  const v = version.trim();
  if (v === 'edge' || v.includes('_alpha')) return 'alpine:edge';
  const m = /^(\d+)\.(\d+)(?:[._]|$)/.exec(v);
  return m ? `alpine:v${m[1]}.${m[2]}` : undefined;
}

/**
 * Debian's release from `/etc/debian_version`-style text: `12.5` → `debian:12`; a testing or
 * unstable system says `<codename>/sid`, which names the release testing will become.
 */
export function debianFromVersionText(text: string): string | undefined {
  const v = text.trim();
  const codename = /^([a-z]+)\/sid$/.exec(v)?.[1];
  return codename === undefined ? withMajor('debian', v) : debianFromCodename(codename);
}
