/**
 * How release numbers become namespace names (`debian:12`, `ubuntu:22.04`, `alpine:v3.19`,
 * `rhel:9`, `amzn:2023`): one function per naming rule, shared by the detectors. The codename
 * tables are the distributions' own (debian/releases.ts, ubuntu/releases.ts), shared with their
 * feed parsers.
 */
import { debianNamespace } from '../debian/releases.js';
import { ubuntuNamespace } from '../ubuntu/releases.js';

/** `debian:<n>` (or `debian:unstable`) for a Debian code name such as `bookworm` or `sid`. */
export function debianFromCodename(codename: string): string | undefined {
  return debianNamespace(codename.toLowerCase());
}

/** `ubuntu:<X.Y>` for an Ubuntu code name such as `jammy`. */
export function ubuntuFromCodename(codename: string): string | undefined {
  return ubuntuNamespace(codename.toLowerCase());
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
