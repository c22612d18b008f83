/**
 * Alpine's secdb JSON (secdb.alpinelinux.org/<branch>/{main,community}.json) and Wolfi's /
 * Chainguard's security.json, which share its shape:
 * `{ distroversion, reponame, urlprefix, apkurl, archs, packages: [ { pkg: { name,
 *    secfixes: { "<fixed version>": ["CVE-…", "CVE-… XSA-…"] } } } ] }`.
 * secdb lists fixes only: an issue without a fix is simply absent. The files are small (a few MB),
 * so they are parsed whole.
 */
import { SEVERITIES, type FixedIn, type Vulnerability } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { apk } from '../apk/version.js';
import { knownNamespaceFormat, versionFormat } from '../index.js';

export interface SecdbOptions {
  /** The namespace of every record (Wolfi: `wolfi:rolling`); default `alpine:<distroversion>`. */
  readonly namespace?: string;
  /** The link of a vulnerability id; default: Alpine's tracker (Chainguard's for wolfi:/chainguard:). */
  readonly link?: (id: string) => string;
}

export const alpineLink = (id: string): string => `https://security.alpinelinux.org/vuln/${id}`;
export const chainguardLink = (id: string): string => `https://images.chainguard.dev/security/${id}`;

/** `v3.19`, `edge`: the branch names secdb publishes. */
const DISTROVERSION = /^(v\d+\.\d+|edge)$/;

/**
 * A vulnerability id as secdb writes them: `CVE-2021-1234`, `XSA-123`, `GHSA-jq35-85cj-fj4p`,
 * `ALPINE-13661`, … (an upper-case scheme, a dash, then letters, digits, `.`, `_`, `:`, `-`).
 */
const ID = /^[A-Z][A-Z0-9]*-[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export function parseSecdb(json: Buffer | string, options: SecdbOptions = {}): SourceData {
  const doc: unknown = JSON.parse(typeof json === 'string' ? json : json.toString('utf8'));
  if (!isRecord(doc)) throw new Error('secdb: the document is not a JSON object');
  const namespace = options.namespace ?? distroNamespace(doc.distroversion);
  const link = options.link ?? defaultLink(namespace);

  // id → origin package → lowest fixed version.
  const fixes = new Map<string, Map<string, string>>();
  for (const entry of Array.isArray(doc.packages) ? doc.packages : []) {
    const pkg = isRecord(entry) && isRecord(entry.pkg) ? entry.pkg : undefined;
    if (!pkg || typeof pkg.name !== 'string' || pkg.name === '' || !isRecord(pkg.secfixes)) continue;
    for (const [version, ids] of Object.entries(pkg.secfixes)) {
      // "0": the package never shipped the vulnerable code (not affected), as claircore and grype
      // read it. An id listed under "0" and under a real version keeps the real one: that entry
      // says a fix was needed in this package.
      if (version === '0' || !apk.valid(version)) continue;
      for (const id of vulnerabilityIds(ids)) {
        let byPackage = fixes.get(id);
        if (!byPackage) fixes.set(id, (byPackage = new Map()));
        const known = byPackage.get(pkg.name);
        // The same id under two versions of one package happens (a fix re-listed after a
        // rebuild or a follow-up patch). The earliest version named as fixing it is the "fixed in":
        // that release already carried the fix, and reporting installs between the two versions
        // as vulnerable would be false positives. apk's ordering decides which is earliest.
        if (known === undefined || apk.compare(version, known) < 0) byPackage.set(pkg.name, version);
      }
    }
  }

  const vulnerabilities: Vulnerability[] = [...fixes.keys()].sort(compareStrings).map((name) => ({
    namespace,
    name,
    description: '',
    link: link(name),
    severity: 'Unknown' as const, // secdb has none; the NVD enrichment may supply one
    metadata: null,
    fixedIn: [...(fixes.get(name) ?? new Map<string, string>())]
      .sort(([a], [b]) => compareStrings(a, b))
      .map(([feature, version]) => ({ feature, version })),
  }));
  return { namespaces: [namespace], vulnerabilities };
}

/**
 * The ids in one secfixes list. Entries may hold several ids separated by whitespace
 * (`"CVE-2020-1234 XSA-321"`); every token that looks like an id is kept, anything else (empty
 * strings, comments, stray punctuation) is dropped.
 */
function vulnerabilityIds(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  const ids: string[] = [];
  for (const item of list) {
    if (typeof item !== 'string') continue;
    for (const token of item.split(/\s+/)) {
      const id = token.replace(/[,;]+$/, '');
      if (ID.test(id) && !ids.includes(id)) ids.push(id);
    }
  }
  return ids;
}

function distroNamespace(distroversion: unknown): string {
  if (typeof distroversion !== 'string' || !DISTROVERSION.test(distroversion)) {
    throw new Error(`secdb: distroversion ${JSON.stringify(distroversion)} is not a branch like v3.19 or edge; pass a namespace`);
  }
  return `alpine:${distroversion}`;
}

function defaultLink(namespace: string): (id: string) => string {
  return namespace.startsWith('wolfi:') || namespace.startsWith('chainguard:') ? chainguardLink : alpineLink;
}

/**
 * Several files of one source as one (Alpine main.json + community.json of a branch, several
 * branches): records with the same (namespace, name) are joined. A feature listed twice keeps its
 * lowest fixed version under the namespace's version format (a namespace of unknown format keeps
 * the first one seen); "no fix" (null) counts as higher than any version, so a known fix wins.
 * Severity is the highest; description, link and metadata come from the first part giving one.
 * Output is sorted by namespace, then name; fixed-in entries by feature.
 */
export function mergeSourceData(parts: readonly SourceData[]): SourceData {
  const namespaces = new Set<string>();
  const merged = new Map<string, { vulnerability: Vulnerability; fixedIn: Map<string, string | null> }>();
  for (const part of parts) {
    for (const namespace of part.namespaces) namespaces.add(namespace);
    for (const v of part.vulnerabilities) {
      const key = `${v.namespace}\u0000${v.name}`;
      const seen = merged.get(key);
      if (!seen) {
        merged.set(key, { vulnerability: v, fixedIn: new Map(v.fixedIn.map((f) => [f.feature, f.version])) });
        continue;
      }
      const old = seen.vulnerability;
      seen.vulnerability = {
        ...old,
        description: old.description || v.description,
        link: old.link || v.link,
        severity: SEVERITIES.indexOf(v.severity) > SEVERITIES.indexOf(old.severity) ? v.severity : old.severity,
        metadata: old.metadata ?? v.metadata,
      };
      const compare = compareFor(v.namespace);
      for (const f of v.fixedIn) {
        if (!seen.fixedIn.has(f.feature)) seen.fixedIn.set(f.feature, f.version);
        else if (lower(f.version, seen.fixedIn.get(f.feature) ?? null, compare)) seen.fixedIn.set(f.feature, f.version);
      }
    }
  }
  const vulnerabilities = [...merged.values()]
    .map(({ vulnerability, fixedIn }) => ({
      ...vulnerability,
      fixedIn: [...fixedIn].sort(([a], [b]) => compareStrings(a, b)).map(([feature, version]): FixedIn => ({ feature, version })),
    }))
    .sort((a, b) => compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name));
  return { namespaces: [...namespaces].sort(compareStrings), vulnerabilities };
}

type Compare = ((a: string, b: string) => number) | undefined;

function compareFor(namespace: string): Compare {
  const format = knownNamespaceFormat(namespace);
  return format === undefined ? undefined : versionFormat(format).compare;
}

/** Whether fixed version a is strictly lower than b (null: no fix, above every version). */
function lower(a: string | null, b: string | null, compare: Compare): boolean {
  if (a === null) return false;
  if (b === null) return true;
  return compare !== undefined && compare(a, b) < 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
