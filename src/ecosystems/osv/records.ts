/**
 * OSV records (the Open Source Vulnerability format that GitHub's advisory database, the Go
 * vulnerability database, PyPA's and RustSec's publish) as Tarsier's vulnerabilities: one per
 * application ecosystem a record names packages of, under the ecosystem's namespace (npm, pypi).
 *
 * A package's ranges become fixed-in entries, each an alternative (model/fixes.ts): an interval
 * from an `introduced` version (included; `0` is every version) to the next `fixed` version (not
 * included, the entry's fix) or `last_affected` version (included, no fix), or without an end (no
 * fix). `SEMVER` and `ECOSYSTEM` ranges are read in the ecosystem's version order; `GIT` ranges
 * name commits, which an installed package does not carry, and are left out. A package's
 * `versions` list is used only when it has no such range: where it has one, the list enumerates
 * the same versions, and an exact-version entry (which has no fix) would hide the range's fix.
 */
import { unionOfFixes } from '../../model/fixes.js';
import { CVE_ID, severityVocabulary, type FixedIn, type Severity, type Vulnerability } from '../../model/vulnerability.js';
import { ecosystemPackageName, ecosystemWithOsvName } from '../catalog.js';
import { versionFormat } from '../index.js';
import { severityFromCvss2, severityFromCvss3 } from '../nvd/feed.js';
import { cvssBaseScore } from './cvss.js';

/** What the parser needs of an application ecosystem (a row of the ecosystem catalog). */
export interface OsvEcosystem {
  /** The namespace its records go to: OSV's name lower-cased (`pypi`). */
  readonly namespace: string;
  /** Orders its versions. */
  readonly compare: (a: string, b: string) => number;
  /** A package's name as Tarsier matches it (PyPI's normalised form; others as written). */
  readonly packageName: (name: string) => string;
}

/** The catalog's application ecosystem OSV names so (`PyPI`), as the parser needs it; undefined for any other ecosystem. */
export function catalogEcosystem(osvName: string): OsvEcosystem | undefined {
  const row = ecosystemWithOsvName(osvName);
  if (!row) return undefined;
  const { compare } = versionFormat(row.versionFormat);
  return { namespace: row.namespace, compare, packageName: (name) => ecosystemPackageName(row, name) };
}

/** GitHub's advisory severities (`database_specific.severity`); OSV has no severity word of its own. */
const GHSA_SEVERITY = severityVocabulary({ low: 'Low', moderate: 'Medium', medium: 'Medium', high: 'High', critical: 'Critical' });

/** The page an advisory without a reference of type ADVISORY links to. */
const OSV_PAGE = 'https://osv.dev/vulnerability/';

type Json = Record<string, unknown>;

/**
 * The vulnerabilities one OSV record says, one per namespace of an ecosystem `ecosystemNamed`
 * knows (by OSV's name: `PyPI`, `crates.io`); none for a withdrawn record or one naming only other
 * ecosystems. Throws, naming the record and the field, when the text is not an OSV record.
 */
export function parseOsvRecord(text: string | Buffer, ecosystemNamed: (osvName: string) => OsvEcosystem | undefined): Vulnerability[] {
  const record = object(JSON.parse(text.toString()), 'the record');
  const id = string(record['id'], 'id');
  const where = (field: string): string => `OSV record ${id}: ${field}`;
  if (record['withdrawn'] !== undefined) return [];

  const entriesByNamespace = new Map<string, { ecosystem: OsvEcosystem; entries: FixedIn[] }>();
  for (const [index, value] of list(record['affected'], where('affected')).entries()) {
    const affected = object(value, where(`affected[${index}]`));
    const pkg = object(affected['package'], where(`affected[${index}].package`));
    // An ecosystem may carry a suffix (`Debian:11`, `Maven:https://repo…`): the name is before it.
    const osvName = string(pkg['ecosystem'], where(`affected[${index}].package.ecosystem`)).split(':', 1)[0]!;
    const ecosystem = ecosystemNamed(osvName);
    if (!ecosystem) continue;
    const feature = ecosystem.packageName(string(pkg['name'], where(`affected[${index}].package.name`)));
    const group = entriesByNamespace.get(ecosystem.namespace) ?? { ecosystem, entries: [] };
    group.entries.push(...packageEntries(affected, feature, ecosystem, (field) => where(`affected[${index}].${field}`)));
    entriesByNamespace.set(ecosystem.namespace, group);
  }

  // Kept under the source's name, as other sources' CVSS data is: { OSV: { CVSSv3: { Score, Vectors } } }.
  const cvss = cvssData(record);
  const severity = severityOf(record, cvss);
  const metadata = Object.keys(cvss).length > 0 ? { OSV: cvss } : null;
  const aliases = record['aliases'] === undefined ? [] : list(record['aliases'], where('aliases')).filter((a) => typeof a === 'string');
  const cves = [...new Set(aliases.filter((a) => CVE_ID.test(a)))].sort();
  return [...entriesByNamespace].flatMap(([namespace, { ecosystem, entries }]) =>
    entries.length === 0
      ? []
      : [
          {
            namespace,
            name: id,
            description: description(record),
            link: advisoryLink(record, id),
            severity,
            metadata,
            fixedIn: unionOfFixes(ecosystem.compare, entries),
            ...(cves.length > 0 && !CVE_ID.test(id) ? { cves } : {}),
          },
        ],
  );
}

/** The fixed-in entries of one `affected` object: its ranges' intervals, else its versions list. */
function packageEntries(affected: Json, feature: string, ecosystem: OsvEcosystem, where: (field: string) => string): FixedIn[] {
  const ranges = affected['ranges'] === undefined ? [] : list(affected['ranges'], where('ranges'));
  const ordered = ranges
    .map((value, index) => ({ range: object(value, where(`ranges[${index}]`)), index }))
    .filter(({ range }) => range['type'] === 'SEMVER' || range['type'] === 'ECOSYSTEM');
  if (ordered.length > 0) {
    return ordered.flatMap(({ range, index }) =>
      intervals(range, ecosystem.compare, (field) => where(`ranges[${index}].${field}`)).map((i) => entry(feature, i)),
    );
  }
  const versions = affected['versions'] === undefined ? [] : list(affected['versions'], where('versions'));
  return versions
    .filter((v): v is string => typeof v === 'string' && v !== '')
    .map((version) => ({ feature, version: null, affectedFrom: version, affectedThrough: version }));
}

interface Interval {
  readonly introduced: string;
  /** Not included: the interval's fix. */
  readonly fixed?: string;
  /** Included, without a fix. */
  readonly lastAffected?: string;
}

/**
 * A range's intervals, its events read in version order (OSV's evaluation: an `introduced` opens
 * an interval, the next `fixed` or `last_affected` closes it). A `limit` event (an upper bound on
 * where the other events apply) is not applied: the entry then reaches further than the record,
 * which never hides a vulnerability.
 */
function intervals(range: Json, compare: (a: string, b: string) => number, where: (field: string) => string): Interval[] {
  const events = list(range['events'], where('events')).map((value, index) => {
    const event = object(value, where(`events[${index}]`));
    const [kind] = Object.keys(event);
    if (kind === undefined) throw new Error(`${where(`events[${index}]`)} is empty`);
    return { kind, version: string(event[kind], where(`events[${index}].${kind}`)) };
  });
  // `introduced: 0` comes before every version; at one version, an interval closes before the next opens.
  const order = (a: string, b: string): number => (a === '0' || b === '0' ? Number(b === '0') - Number(a === '0') : compare(a, b));
  const rank = (kind: string): number => (kind === 'introduced' ? 1 : 0);
  const sorted = events
    .filter((e) => e.kind === 'introduced' || e.kind === 'fixed' || e.kind === 'last_affected')
    .sort((a, b) => order(a.version, b.version) || rank(a.kind) - rank(b.kind));
  const found: Interval[] = [];
  let open: string | undefined;
  for (const { kind, version } of sorted) {
    if (kind === 'introduced') {
      open ??= version;
    } else if (open !== undefined) {
      found.push(kind === 'fixed' ? { introduced: open, fixed: version } : { introduced: open, lastAffected: version });
      open = undefined;
    }
  }
  if (open !== undefined) found.push({ introduced: open });
  return found;
}

function entry(feature: string, interval: Interval): FixedIn {
  return {
    feature,
    version: interval.fixed ?? null,
    ...(interval.introduced !== '0' ? { affectedFrom: interval.introduced } : {}),
    ...(interval.lastAffected !== undefined ? { affectedThrough: interval.lastAffected } : {}),
  };
}

type CvssScheme = 'CVSSv3' | 'CVSSv4' | 'CVSSv2';
type CvssData = Partial<Record<CvssScheme, { Score: number; Vectors: string }>>;

const SCHEME_OF_TYPE: Readonly<Record<string, CvssScheme>> = { CVSS_V3: 'CVSSv3', CVSS_V4: 'CVSSv4', CVSS_V2: 'CVSSv2' };

/** The record's `severity` vectors (the first of each CVSS version) with their base scores; a vector that scores nothing is left out. */
function cvssData(record: Json): CvssData {
  const found: CvssData = {};
  for (const value of Array.isArray(record['severity']) ? record['severity'] : []) {
    if (!isObject(value) || typeof value['score'] !== 'string') continue;
    const scheme = SCHEME_OF_TYPE[String(value['type'])];
    if (scheme === undefined || found[scheme] !== undefined) continue;
    const score = cvssBaseScore(value['score']);
    if (score !== undefined) found[scheme] = { Score: score, Vectors: value['score'] };
  }
  return found;
}

/** The severity of the record's CVSS scores (v3 first, as the NVD enrichment reads, then v4, then v2), else GitHub's word, else Unknown. */
function severityOf(record: Json, cvss: CvssData): Severity {
  if (cvss.CVSSv3) return severityFromCvss3(cvss.CVSSv3.Score);
  if (cvss.CVSSv4) return severityFromCvss3(cvss.CVSSv4.Score);
  if (cvss.CVSSv2) return severityFromCvss2(cvss.CVSSv2.Score);
  const words = [
    record['database_specific'],
    ...(Array.isArray(record['affected']) ? record['affected'] : []).map((a) => (isObject(a) ? a['database_specific'] : undefined)),
  ];
  for (const specific of words) {
    if (isObject(specific) && typeof specific['severity'] === 'string') {
      const severity = GHSA_SEVERITY(specific['severity']);
      if (severity !== 'Unknown') return severity;
    }
  }
  return 'Unknown';
}

function description(record: Json): string {
  const details = typeof record['details'] === 'string' ? record['details'].trim() : '';
  const summary = typeof record['summary'] === 'string' ? record['summary'].trim() : '';
  return details || summary;
}

function advisoryLink(record: Json, id: string): string {
  const references = Array.isArray(record['references']) ? record['references'] : [];
  const advisory = references.find((r) => isObject(r) && r['type'] === 'ADVISORY' && typeof r['url'] === 'string') as Json | undefined;
  return (advisory?.['url'] as string | undefined) ?? `${OSV_PAGE}${encodeURIComponent(id)}`;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function object(value: unknown, where: string): Json {
  if (!isObject(value)) throw new Error(`${where} is not an object`);
  return value;
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new Error(`${where} is not a list`);
  return value;
}

function string(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`${where} is not a non-empty string`);
  return value;
}
