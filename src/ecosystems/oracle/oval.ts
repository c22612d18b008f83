/**
 * Oracle Linux ELSA OVAL: `com.oracle.elsa-all.xml` or the per-year
 * `com.oracle.elsa-<YYYY>.xml`. One `class="patch"` definition per ELSA; only fixed advisories
 * are published, so every FixedIn entry has a version.
 *
 * - Name: the ELSA id (`ELSA-2099-1234`) from the title, else the `source="elsa"` reference.
 * - Namespace `oracle:<N>` from the "Oracle Linux N is installed" criterion that holds beside each
 *   package criterion (as Clair read it: the criteria tree's alternatives, AND = product,
 *   OR = union). A definition covering several majors becomes one vulnerability per namespace,
 *   each with its own packages. A package with no such criterion beside it takes every
 *   `affected/platform` "Oracle Linux N" of the definition.
 * - FixedIn from "<pkg> is earlier than <evr>"; "is signed with the Oracle Linux … key" criteria
 *   are ignored. "Oracle Linux arch is <arch>" holds beside the packages of each architecture's
 *   branch (the machine's architecture: Oracle tests it on the release package); its entries are
 *   limited to the package architectures such a machine runs (x86_64: x86_64, the 32-bit x86
 *   ones of multilib, noarch; aarch64: aarch64, noarch), so a package named per branch with
 *   different fixes is affected below its own branch's fix. Entries with no such criterion beside
 *   them hold for every architecture. A package named twice for one ELSA, major and branch is
 *   affected below the higher fix.
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
const ORACLE_ARCH = /^\s*Oracle Linux arch is (\S+)\s*$/;
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
      const major = ORACLE_MAJOR.exec(c.comment);
      if (major) return `major:${Number(major[1])}`;
      const arch = ORACLE_ARCH.exec(c.comment);
      return arch ? `arch:${arch[1]}` : undefined;
    },
    wanted: (c) => EARLIER_THAN.test(c.comment),
  });
  // Every major the definition speaks of is a namespace the document covers, kept or not.
  for (const major of platformMajors) collector.addNamespace(`oracle:${major}`);
  for (const { contexts } of reached) {
    for (const facts of contexts) for (const major of factsOf(facts, 'major:')) collector.addNamespace(`oracle:${major}`);
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
    const [, feature, version] = EARLIER_THAN.exec(criterion.comment) as RegExpExecArray;
    if (KSPLICE.test(version as string)) continue;
    for (const facts of contexts) {
      const named = factsOf(facts, 'major:');
      const arches = factsOf(facts, 'arch:');
      // Two different majors or architectures in one alternative cannot both hold: nothing to add.
      if (named.length > 1 || arches.length > 1) continue;
      const majors = named.length === 1 ? [Number(named[0])] : platformMajors;
      const limited = arches.length === 1 ? { arches: machinePackages(arches[0] as string) } : {};
      for (const major of majors) collector.add(head(major), { feature: feature as string, version: version as string, ...limited });
    }
  }
}

/** The values of one kind of fact (`major:`, `arch:`) in an alternative's facts. */
function factsOf(facts: readonly string[], kind: string): string[] {
  return facts.filter((f) => f.startsWith(kind)).map((f) => f.slice(kind.length));
}

/** 32-bit x86 package architectures, which an x86_64 machine runs beside its own (multilib). */
const X86_32 = ['i386', 'i486', 'i586', 'i686', 'athlon'];

/** The package architectures a machine of an architecture runs: its own, the 32-bit ones of x86_64, and noarch. */
function machinePackages(arch: string): string[] {
  const own = arch === 'x86_64' ? [arch, ...X86_32] : X86_32.includes(arch) ? X86_32 : [arch];
  return [...new Set([...own, 'noarch'])].sort();
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
