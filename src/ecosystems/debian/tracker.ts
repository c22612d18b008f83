/**
 * The Debian Security Tracker's JSON document (security-tracker.debian.org/tracker/data/json):
 * `{ <source package>: { <vulnerability id>: { description, scope, debianbug,
 *    releases: { <codename>: { status, repositories, fixed_version?, urgency, nodsa?, ... } } } } }`.
 *
 * The real document is ~60 MB, so it is read as a stream, one top-level package at a time: memory
 * holds one package's entries plus the output being built, never the whole document.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import streamObject from 'stream-json/streamers/stream-object.js';
import {
  SEVERITIES,
  severityVocabulary,
  type FixedIn,
  type FixState,
  type Severity,
  type Vulnerability,
} from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { dpkg } from '../dpkg/version.js';
import { debianNamespace } from './releases.js';

export interface DebianTrackerData extends SourceData {
  /** Release codenames found in the document that DEBIAN_RELEASES does not map, sorted. */
  readonly unknownReleases: readonly string[];
}

export const DEBIAN_TRACKER_LINK = 'https://security-tracker.debian.org/tracker/';

/** One (namespace, CVE) being assembled: source package → fixed version (null: no fix yet). */
interface Entry {
  severity: number;
  readonly fixedIn: Map<string, FixedIn>;
}

export async function parseDebianTracker(input: Readable): Promise<DebianTrackerData> {
  const byNamespace = new Map<string, Map<string, Entry>>();
  // One description per CVE, shared by every namespace (the tracker repeats it per package).
  const descriptions = new Map<string, string>();
  const namespaces = new Set<string>();
  const unknownReleases = new Set<string>();

  // pipeline() forwards a failure of either side (a read error, malformed JSON) to the iterator.
  // streamValues: false makes the parser emit whole keys and strings only (no per-chunk tokens),
  // which doubles its speed; values are small, so nothing is lost.
  const items = pipeline(input, streamObject.withParserAsStream({ streamValues: false }), () => {});
  for await (const item of items as AsyncIterable<{ key: string; value: unknown }>) {
    const pkg = copy(item.key);
    if (!isRecord(item.value)) continue;
    for (const [key, vuln] of Object.entries(item.value)) {
      if (!isRecord(vuln)) continue;
      const id = copy(key);
      const releases = isRecord(vuln.releases) ? vuln.releases : {}; // the tracker writes [] for none
      for (const [codename, release] of Object.entries(releases)) {
        const namespace = debianNamespace(codename);
        if (namespace === undefined) {
          unknownReleases.add(copy(codename));
          continue;
        }
        namespaces.add(namespace);
        // Only CVEs, as vunnel and Clair: TEMP-… ids are the tracker's placeholders for issues
        // without a CVE yet (renamed once one is assigned) and DSA/DLA ids are advisories.
        if (!id.startsWith('CVE-') || !isRecord(release)) continue;
        const version = fixedVersion(release);
        if (version === undefined) continue;
        let entries = byNamespace.get(namespace);
        if (!entries) byNamespace.set(namespace, (entries = new Map()));
        let entry = entries.get(id);
        if (!entry) entries.set(id, (entry = { severity: 0, fixedIn: new Map() }));
        const state = version === null ? unfixedState(release) : undefined;
        entry.fixedIn.set(pkg, { feature: pkg, version: version === null ? null : copy(version), ...(state ? { state } : {}) });
        // Severity is the highest urgency among the entries kept in this namespace: a package
        // left out (not affected, undetermined, unusable version) says nothing about how the
        // vulnerability affects the packages that are matched.
        entry.severity = Math.max(entry.severity, SEVERITIES.indexOf(urgencySeverity(release.urgency)));
        if (!descriptions.has(id) && typeof vuln.description === 'string' && vuln.description !== '') {
          descriptions.set(id, copy(vuln.description));
        }
      }
    }
  }

  const vulnerabilities: Vulnerability[] = [];
  for (const namespace of [...byNamespace.keys()].sort(compareStrings)) {
    const entries = byNamespace.get(namespace) ?? new Map<string, Entry>();
    for (const name of [...entries.keys()].sort(compareStrings)) {
      const entry = entries.get(name);
      if (!entry) continue;
      vulnerabilities.push({
        namespace,
        name,
        description: descriptions.get(name) ?? '',
        link: DEBIAN_TRACKER_LINK + name,
        severity: SEVERITIES[entry.severity] ?? 'Unknown',
        metadata: null,
        fixedIn: [...entry.fixedIn].sort(([a], [b]) => compareStrings(a, b)).map(([, fixedIn]) => fixedIn),
      });
    }
  }
  return {
    namespaces: [...namespaces].sort(compareStrings),
    vulnerabilities,
    unknownReleases: [...unknownReleases].sort(compareStrings),
  };
}

/**
 * What the tracker says of an open issue beyond "no fix yet": `<no-dsa>` with
 * reason `ignored` is no fix through the security channel (will not fix), `postponed` a fix
 * deferred to a later update. A `<no-dsa>` without a reason (a minor issue) may still be fixed in
 * a point release: plain affected.
 */
function unfixedState(release: Record<string, unknown>): FixState | undefined {
  if (release.nodsa === undefined) return undefined;
  if (release.nodsa_reason === 'ignored') return 'will_not_fix';
  if (release.nodsa_reason === 'postponed') return 'fix_deferred';
  return undefined;
}

/**
 * What one release entry says about its package: a fixed version, null (affected, no fix yet), or
 * undefined (leave the package out). The checks run in Clair's order: `undetermined` is skipped;
 * `fixed_version "0"` means the release never shipped a vulnerable version (not affected: Clair v2
 * stored #MINV#, Clair v3 and claircore drop it, so does Tarsier); `open` has no fix; `resolved`
 * carries the fixing version (skipped when dpkg would not accept it). Any other status is skipped.
 */
function fixedVersion(release: Record<string, unknown>): string | null | undefined {
  const { status, fixed_version: fixed } = release;
  if (status === 'undetermined') return undefined;
  if (fixed === '0') return undefined;
  if (status === 'open') return null;
  if (status === 'resolved' && typeof fixed === 'string' && dpkg.valid(fixed)) return fixed;
  return undefined;
}

/**
 * The tracker's urgency → severity (Clair's table). Urgencies may carry `*` / `**` suffixes
 * (`low**`: the urgency was set without a closer look), which are ignored.
 */
const urgencyWords = severityVocabulary({
  unimportant: 'Negligible',
  'end-of-life': 'Negligible',
  low: 'Low',
  medium: 'Medium',
  high: 'High',
});

export function urgencySeverity(urgency: unknown): Severity {
  // `not yet assigned` and anything new are Unknown.
  return typeof urgency === 'string' ? urgencyWords(urgency.trim().replace(/\*+$/, '')) : 'Unknown';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A copy of s that owns its characters. Strings cut out of the parser's input can be V8 "sliced
 * strings" that keep the whole input chunk they came from alive; the few strings kept in the
 * output are copied so each chunk can be collected once parsed.
 */
function copy(s: string): string {
  return s.length > 12 ? Buffer.from(s, 'utf8').toString('utf8') : s;
}
