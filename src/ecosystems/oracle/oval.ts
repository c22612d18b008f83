/**
 * Oracle Linux ELSA OVAL (data-sources §4.5): `com.oracle.elsa-all.xml` or the per-year
 * `com.oracle.elsa-<YYYY>.xml`. One `class="patch"` definition per ELSA; only fixed advisories
 * are published, so every FixedIn entry has a version.
 *
 * - Name: the ELSA id (`ELSA-2099-1234`) from the title, else the `source="elsa"` reference.
 * - Namespace `oracle:<N>` from the "Oracle Linux N is installed" criterion that holds beside each
 *   package criterion (clair-behaviour §6.6: the criteria tree's alternatives, AND = product,
 *   OR = union). A definition covering several majors becomes one vulnerability per namespace,
 *   each with its own packages. A package with no such criterion beside it takes every
 *   `affected/platform` "Oracle Linux N" of the definition.
 * - FixedIn from "<pkg> is earlier than <evr>"; "is signed with the Oracle Linux … key" and
 *   "Oracle Linux arch is …" criteria are ignored.
 * - Userspace ksplice is skipped (ksplice userspace packages are not used inside containers):
 *   definitions whose affected CPEs are all of the `userspace_ksplice` edition (claircore), and
 *   criteria whose evr carries a `ksplice` release tag such as `.ksplice1.` (Clair).
 * - Severity: N/A → Negligible, LOW, MODERATE → Medium, IMPORTANT → High, CRITICAL.
 * - Link: the `source="elsa"` reference URL. Metadata null. Descriptions have whitespace collapsed.
 * - cves: the ids of the `source="CVE"` references in document order (`advisory/cve` repeats them).
 *
 * `namespaces` lists every `oracle:N` the document mentions (criteria or platforms of its patch
 * definitions); the per-year files only cover their year, so the updater should read elsa-all.
 */
import type { Readable } from 'node:stream';
import { severityVocabulary } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { rpm } from '../rpm/version.js';
import { reachCriteria } from '../oval/criteria.js';
import { cveReferences, findReference, normalizeText, VulnerabilityCollector, type VulnerabilityHead } from '../oval/collect.js';
import { readOval, type OvalDefinition } from '../oval/reader.js';

const EARLIER_THAN = /^\s*(\S+) is earlier than (\S+)\s*$/;
const ORACLE_MAJOR = /^\s*Oracle Linux (\d+) is installed\s*$/;
const PLATFORM = /^\s*Oracle Linux (\d+)\s*$/;
const KSPLICE = /ksplice/i;

export async function parseOracleOval(input: Readable): Promise<SourceData> {
  const collector = new VulnerabilityCollector(rpm);
  await readOval(input, {
    label: 'Oracle OVAL',
    onDefinition: (def) => addDefinition(def, collector),
  });
  return collector.result();
}

function addDefinition(def: OvalDefinition, collector: VulnerabilityCollector): void {
  if (def.class.trim().toLowerCase() !== 'patch' || def.criteria === null) return;
  const platformMajors = def.platforms.flatMap((p) => {
    const m = PLATFORM.exec(p);
    return m ? [Number(m[1])] : [];
  });
  const reached = reachCriteria(def.criteria, {
    fact: (c) => {
      const m = ORACLE_MAJOR.exec(c.comment);
      return m ? `major:${Number(m[1])}` : undefined;
    },
    wanted: (c) => EARLIER_THAN.test(c.comment),
  });
  // Every major the definition speaks of is a namespace the document covers, kept or not.
  for (const major of platformMajors) collector.addNamespace(`oracle:${major}`);
  for (const { contexts } of reached) {
    for (const facts of contexts) for (const f of facts) collector.addNamespace(`oracle:${f.slice('major:'.length)}`);
  }
  if (onlyUserspaceKsplice(def.affectedCpes)) return;

  const name = elsaName(def);
  if (name === '') return;
  const cves = cveReferences(def.references);
  const head = (major: number): VulnerabilityHead => ({
    namespace: `oracle:${major}`,
    name,
    description: normalizeText(def.description),
    link: (findReference(def.references, 'elsa') ?? def.references[0])?.refUrl.trim() ?? '',
    severity: oracleSeverity(def.severity),
    cves,
  });
  for (const { criterion, contexts } of reached) {
    const [, pkg, evr] = EARLIER_THAN.exec(criterion.comment) as RegExpExecArray;
    if (KSPLICE.test(evr as string)) continue;
    const majors = new Set<number>();
    for (const facts of contexts) {
      if (facts.length === 0) for (const m of platformMajors) majors.add(m);
      else if (facts.length === 1) majors.add(Number((facts[0] as string).slice('major:'.length)));
      // Two different majors in one alternative cannot both hold: nothing to add.
    }
    for (const major of majors) collector.add(head(major), pkg as string, evr as string);
  }
}

/** True when the definition lists affected CPEs and every one is of the userspace_ksplice edition. */
function onlyUserspaceKsplice(cpes: readonly string[]): boolean {
  return cpes.length > 0 && cpes.every((cpe) => cpeEdition(cpe) === 'userspace_ksplice');
}

/** The edition field of a CPE 2.2 URI (`cpe:/a:oracle:linux:8::userspace_ksplice`) or 2.3 string. */
function cpeEdition(cpe: string): string {
  if (cpe.startsWith('cpe:2.3:')) return cpe.split(':')[7] ?? '';
  if (cpe.startsWith('cpe:/')) return cpe.slice('cpe:/'.length).split(':')[5] ?? '';
  return '';
}

const ELSA_ID = /\bELSA-\d{4}-\d+\b/;

function elsaName(def: OvalDefinition): string {
  return ELSA_ID.exec(def.title)?.[0] ?? (findReference(def.references, 'elsa')?.refId.trim() || '');
}

/** N/A → Negligible, LOW, MODERATE → Medium, IMPORTANT → High, CRITICAL (any case); else Unknown. */
export const oracleSeverity = severityVocabulary({
  'n/a': 'Negligible',
  low: 'Low',
  moderate: 'Medium',
  important: 'High',
  critical: 'Critical',
});
