/**
 * Assembling parsed OVAL definitions into vulnerability records: one record per (namespace, name),
 * its FixedIn entries as few as their union takes (model/fixes.ts), and a deterministic order.
 */
import type { VersionFormat } from '../../model/version-format.js';
import { unionOfFixes } from '../../model/fixes.js';
import { CVE_ID, type FixedIn, type Severity, type Vulnerability } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import type { OvalReference } from './reader.js';

export interface VulnerabilityHead {
  readonly namespace: string;
  readonly name: string;
  readonly description: string;
  readonly link: string;
  readonly severity: Severity;
  /** The CVE ids an advisory lists (cveReferences); left out of the record when absent or empty. */
  readonly cves?: readonly string[];
}

interface Draft {
  readonly head: VulnerabilityHead;
  /** Its entries as added (unionOfFixes merges those of each feature). */
  readonly fixedIn: FixedIn[];
}

/**
 * Collects FixedIn entries per (namespace, vulnerability name). A feature named more than once for
 * one vulnerability has alternatives, as OVAL reads several criteria or definitions: their union
 * (model/fixes.ts) is kept, the highest of overlapping fixes for one architecture and range. The
 * first definition seen for a (namespace, name) supplies its description, link, severity and CVE ids.
 */
export class VulnerabilityCollector {
  private readonly drafts = new Map<string, Draft>();
  private readonly namespaceSet = new Set<string>();

  constructor(private readonly format: VersionFormat) {}

  /** Records a namespace the document covers, even if no vulnerability ends up in it. */
  addNamespace(namespace: string): void {
    this.namespaceSet.add(namespace);
  }

  /**
   * Adds one FixedIn entry. One whose version the format refuses is skipped (false is returned);
   * null (no fix yet) is always accepted, with what the source says of it (state: will_not_fix,
   * …). A bound the format cannot read is dropped, which leaves the entry affecting more rather
   * than less.
   */
  add(head: VulnerabilityHead, fixedIn: FixedIn): boolean {
    if (fixedIn.feature === '') return false;
    if (fixedIn.version !== null && !this.format.valid(fixedIn.version)) return false;
    this.namespaceSet.add(head.namespace);
    const key = `${head.namespace}\u0000${head.name}`;
    let draft = this.drafts.get(key);
    if (!draft) {
      draft = { head, fixedIn: [] };
      this.drafts.set(key, draft);
    }
    const { affectedAbove, affectedThrough, state, ...rest } = fixedIn;
    const entry: FixedIn = {
      ...rest,
      ...(fixedIn.version === null && state !== undefined ? { state } : {}),
      ...(affectedAbove !== undefined && this.format.valid(affectedAbove) ? { affectedAbove } : {}),
      ...(affectedThrough !== undefined && this.format.valid(affectedThrough) ? { affectedThrough } : {}),
    };
    draft.fixedIn.push(entry);
    return true;
  }

  /**
   * Vulnerabilities (each has the FixedIn entry that made it), sorted by namespace then name
   * (numbers in natural order); FixedIn sorted by feature name (unionOfFixes); namespaces sorted.
   */
  result(): SourceData {
    const vulnerabilities: Vulnerability[] = [...this.drafts.values()]
      .map((d) => ({
        namespace: d.head.namespace,
        name: d.head.name,
        description: d.head.description,
        link: d.head.link,
        severity: d.head.severity,
        metadata: null,
        fixedIn: unionOfFixes(this.format.compare, d.fixedIn),
        // Absent rather than empty, so records of sources that list no CVEs keep their shape.
        ...(d.head.cves !== undefined && d.head.cves.length > 0 ? { cves: [...d.head.cves] } : {}),
      }))
      .sort((a, b) => compareNames(a.namespace, b.namespace) || compareNames(a.name, b.name));
    const namespaces = [...this.namespaceSet].sort(compareNames);
    return { namespaces, vulnerabilities };
  }
}

/** Code-unit order: locale-independent, so output is identical on every machine. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Names with numbers in natural order (`CVE-2099-999` before `CVE-2099-1000`, `oracle:7` before
 * `oracle:10`), ties broken by code-unit order.
 */
export function compareNames(a: string, b: string): number {
  const x = a.split(/(\d+)/);
  const y = b.split(/(\d+)/);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const p = x[i] as string;
    const q = y[i] as string;
    if (p === q) continue;
    if (i % 2 === 1) {
      const byLength = p.replace(/^0+/, '').length - q.replace(/^0+/, '').length;
      if (byLength !== 0) return byLength < 0 ? -1 : 1;
    }
    return compareStrings(p, q);
  }
  return x.length - y.length || compareStrings(a, b);
}

/** Trims and turns every run of whitespace (newlines and indentation included) into one space. */
export function normalizeText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * The ids of the `source="CVE"` references (source compared case-insensitively), in document
 * order, each once: the CVEs an advisory (RHSA, ELSA) lists, through which CVE-keyed data (NVD,
 * EPSS, KEV) reaches a record named by the advisory. A ref_id that is not a CVE id is skipped.
 */
export function cveReferences(references: readonly OvalReference[]): string[] {
  const ids = new Set<string>();
  for (const reference of references) {
    const id = reference.refId.trim();
    if (reference.source.trim().toLowerCase() === 'cve' && CVE_ID.test(id)) ids.add(id);
  }
  return [...ids];
}

/** The first reference whose source matches (case-insensitive). */
export function findReference(references: readonly OvalReference[], source: string): OvalReference | undefined {
  const wanted = source.toLowerCase();
  return references.find((r) => r.source.trim().toLowerCase() === wanted);
}
