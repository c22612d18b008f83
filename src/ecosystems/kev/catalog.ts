import { CVE_ID } from '../../model/vulnerability.js';
import type { KevCatalog, KevEntry } from '../../model/risk.js';

/**
 * CISA's Known Exploited Vulnerabilities catalog,
 * `known_exploited_vulnerabilities.json`:
 * `{ title, catalogVersion, dateReleased, count, vulnerabilities: [ { cveID, vendorProject, product,
 * vulnerabilityName, dateAdded, shortDescription, requiredAction, dueDate,
 * knownRansomwareCampaignUse, notes, cwes } ] }`. The file is a few MB and is parsed whole.
 *
 * A document that is not JSON, not an object, or has no `vulnerabilities` array throws (the feed
 * is taken as corrupt and the last good catalog is kept). Per entry:
 * - `cveID` must be a CVE id and `dateAdded` a YYYY-MM-DD date, or the entry is skipped: CISA's
 *   catalog has had malformed entries, and one of them should not stop the rest;
 * - `dueDate` is kept when it is a YYYY-MM-DD date, else '' (it is advice to federal agencies, not
 *   what makes the entry);
 * - the other strings are trimmed, and '' when missing or not strings.
 * A CVE listed twice keeps its entry with the earliest `dateAdded` (the first one on a tie), at the
 * place of its first listing. `count` and `dateReleased` are not checked: the entries are what counts.
 */
export function parseKevCatalog(json: Buffer): KevCatalog {
  let document: unknown;
  try {
    document = JSON.parse(json.toString('utf8').replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new Error(`KEV catalog: not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isObject(document)) throw new Error('KEV catalog: the document is not a JSON object');
  const vulnerabilities = document['vulnerabilities'];
  if (!Array.isArray(vulnerabilities)) throw new Error('KEV catalog: the document has no "vulnerabilities" array');
  const entries = new Map<string, KevEntry>();
  for (const element of vulnerabilities) {
    const entry = entryOf(element);
    if (entry === undefined) continue;
    const known = entries.get(entry.cve);
    if (known === undefined || entry.dateAdded < known.dateAdded) entries.set(entry.cve, entry);
  }
  return { kind: 'kev', catalogVersion: text(document['catalogVersion']), entries: [...entries.values()] };
}

const DATE = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function text(v: unknown): string {
  return typeof v === 'string' ? v.trim() : '';
}

function entryOf(element: unknown): KevEntry | undefined {
  if (!isObject(element)) return undefined;
  const cve = text(element['cveID']);
  const dateAdded = text(element['dateAdded']);
  if (!CVE_ID.test(cve) || !DATE.test(dateAdded)) return undefined;
  const dueDate = text(element['dueDate']);
  return {
    cve,
    vendorProject: text(element['vendorProject']),
    product: text(element['product']),
    vulnerabilityName: text(element['vulnerabilityName']),
    dateAdded,
    dueDate: DATE.test(dueDate) ? dueDate : '',
    knownRansomwareCampaignUse: text(element['knownRansomwareCampaignUse']),
    requiredAction: text(element['requiredAction']),
  };
}
