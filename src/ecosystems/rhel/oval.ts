/**
 * Red Hat OVAL: the OVAL v2 streams (`RHEL<N>/rhel-<N>-including-unpatched.oval.xml`,
 * or the patched-only `rhel-<N>.oval.xml`) and, in the same shape, the frozen OVAL v1 files.
 * Every record lands in `rhel:<major>` (CentOS, Rocky and AlmaLinux layers match against it).
 *
 * - `class="patch"` (RHSA, and RHBA/RHEA that carry fixes): named by the advisory id (the title
 *   before ": ", e.g. `RHSA-2020:1980`), link = the `source="RHSA"` reference, cves = the ids of
 *   its `source="CVE"` references in document order (the `advisory/cve` elements repeat them).
 *   FixedIn from the criteria "<pkg> is earlier than <evr>", limited to the architectures the
 *   criterion's rpminfo state names (`<arch operation="pattern match">aarch64|ppc64le|s390x|x86_64`:
 *   an i686 build of the package does not satisfy the test; a state without `<arch>`, which Red
 *   Hat writes for noarch packages, holds for every architecture). A package named twice for one
 *   advisory and major (two criteria) is affected below the higher fix of its architecture.
 * - `class="vulnerability"` (`oval:com.redhat.cve:def:*`, unpatched): named by the CVE id, link =
 *   the CVE reference. FixedIn null (no fix) for each "<pkg> is installed" criterion, only when
 *   `advisory/affected/resolution@state` is Affected, Fix deferred (fix_deferred), Will not fix or Out of support
 *   scope (will_not_fix), or Under investigation: all "affected, no fix". A component listed only under another
 *   state is left out. No cves: the name is the CVE.
 * - `oval:com.redhat.unaffected:def:*` and every other class: skipped.
 *
 * Criteria are read as Clair read them, from the comments: the tree's
 * alternatives (AND = product, OR = union) are considered only as far as needed to know which
 * facts hold beside a package criterion. "is signed with Red Hat … key" and "must be installed"
 * criteria are ignored. A package criterion is dropped when every alternative holding it also
 * holds "Red Hat Enterprise Linux <M> is installed" for another major. One holding beside "Module
 * <name:stream> is enabled" gives an entry scoped to that module stream (FixedIn.module), one per
 * stream it holds with, and one without a module when it also holds in an alternative without any:
 * a module's advisory applies to the packages built in that stream (their modularity label), the
 * others to packages built outside any module.
 *
 * Metadata is null (CVSS comes from NVD); descriptions have their whitespace collapsed.
 */
import type { Readable } from 'node:stream';
import { CVE_ID_IN_TEXT, severityVocabulary, type FixState, type Severity } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { rpm } from '../rpm/version.js';
import { reachCriteria } from '../oval/criteria.js';
import { cveReferences, findReference, normalizeText, VulnerabilityCollector, type VulnerabilityHead } from '../oval/collect.js';
import { readOval, type OvalCriterion, type OvalDefinition } from '../oval/reader.js';
import { testArches } from '../oval/states.js';

/**
 * resolution@state values that mean "affected, no fix available" (compared lower-cased), with
 * the fix state each says beyond that: Red Hat will not fix it (also when it is out of the
 * product's support scope), or has deferred the fix.
 */
const AFFECTED_STATES = new Map<string, FixState | undefined>([
  ['affected', undefined],
  ['under investigation', undefined],
  ['fix deferred', 'fix_deferred'],
  ['will not fix', 'will_not_fix'],
  ['out of support scope', 'will_not_fix'],
]);

const EARLIER_THAN = /^\s*(\S+) is earlier than (\S+)\s*$/;
const INSTALLED = /^\s*(\S+) is installed\s*$/;
const MODULE = /^\s*Module (\S+) is enabled\s*$/;
const RHEL_MAJOR = /^\s*Red Hat Enterprise Linux (\d+)\b.* is installed\s*$/;

/** A patch definition's fixes, kept until the states that say their architectures are read. */
interface PendingPatch {
  readonly head: VulnerabilityHead;
  readonly fixes: ReadonlyArray<{ readonly feature: string; readonly version: string; readonly testRef: string; readonly module?: string }>;
}

/** Parses one Red Hat OVAL document into `rhel:<major>`. */
export async function parseRedHatOval(input: Readable, major: number): Promise<SourceData> {
  if (!Number.isInteger(major) || major < 1) throw new Error(`Red Hat OVAL: invalid major release ${String(major)}`);
  const namespace = `rhel:${major}`;
  const collector = new VulnerabilityCollector(rpm);
  collector.addNamespace(namespace);
  const patches: PendingPatch[] = [];
  // Only the tests of the package criteria kept, and their states: the tables are most of the document.
  const tests = new Set<string>();
  const tables = await readOval(input, {
    label: `Red Hat OVAL (${namespace})`,
    tables: { keepTest: (id) => tests.has(id) },
    onDefinition: (def) => {
      const patch = addDefinition(def, major, namespace, collector);
      if (!patch) return;
      patches.push(patch);
      for (const fix of patch.fixes) tests.add(fix.testRef);
    },
  });
  for (const { head, fixes } of patches) {
    for (const { feature, version, testRef, module } of fixes) {
      const arches = testArches(tables, testRef);
      collector.add(head, { feature, version, ...(arches ? { arches } : {}), ...(module !== undefined ? { module } : {}) });
    }
  }
  return collector.result();
}

/** Adds an unpatched definition's entries; returns a patch definition's, for when the states are known. */
function addDefinition(def: OvalDefinition, major: number, namespace: string, collector: VulnerabilityCollector): PendingPatch | undefined {
  if (def.criteria === null || def.id.includes(':com.redhat.unaffected:')) return undefined;
  const kind = def.class.trim().toLowerCase();
  if (kind === 'patch') return patchOf(def, major, namespace);
  if (kind === 'vulnerability') addUnpatched(def, major, namespace, collector);
  return undefined;
}

function patchOf(def: OvalDefinition, major: number, namespace: string): PendingPatch | undefined {
  const name = advisoryName(def);
  if (name === '') return undefined;
  const head: VulnerabilityHead = {
    namespace,
    name,
    description: normalizeText(def.description),
    link: (findReference(def.references, 'RHSA') ?? def.references[0])?.refUrl.trim() ?? '',
    severity: redHatSeverity(def.severity, def.title),
    cves: cveReferences(def.references),
  };
  const fixes = packageCriteria(def, major, EARLIER_THAN).map(({ criterion, module }) => {
    const [, feature, version] = EARLIER_THAN.exec(criterion.comment) as RegExpExecArray;
    return {
      feature: feature as string,
      version: version as string,
      testRef: criterion.testRef,
      ...(module !== undefined ? { module } : {}),
    };
  });
  return { head, fixes };
}

function addUnpatched(def: OvalDefinition, major: number, namespace: string, collector: VulnerabilityCollector): void {
  // Component → its state; a component under several affected states keeps the first.
  const affected = new Map<string, FixState | undefined>();
  const other = new Set<string>();
  let anyAffected = false;
  for (const resolution of def.resolutions) {
    const key = resolution.state.toLowerCase();
    const isAffected = AFFECTED_STATES.has(key);
    anyAffected ||= isAffected;
    for (const component of resolution.components) {
      if (!isAffected) other.add(component);
      else if (!affected.has(component)) affected.set(component, AFFECTED_STATES.get(key));
    }
  }
  if (!anyAffected) return;
  const name = cveName(def);
  if (name === '') return;
  const head: VulnerabilityHead = {
    namespace,
    name,
    description: normalizeText(def.description),
    link: (findReference(def.references, 'CVE') ?? def.references[0])?.refUrl.trim() ?? '',
    severity: redHatSeverity(def.severity, def.title),
  };
  for (const { criterion, module } of packageCriteria(def, major, INSTALLED)) {
    const pkg = (INSTALLED.exec(criterion.comment) as RegExpExecArray)[1] as string;
    if (other.has(pkg) && !affected.has(pkg)) continue;
    const state = affected.get(pkg);
    collector.add(head, { feature: pkg, version: null, ...(state ? { state } : {}), ...(module !== undefined ? { module } : {}) });
  }
}

/**
 * The criteria matching `pattern` that hold in an alternative of this major, each once per module
 * stream such an alternative requires enabled (undefined: an alternative requiring none).
 */
function packageCriteria(def: OvalDefinition, major: number, pattern: RegExp): { criterion: OvalCriterion; module?: string }[] {
  if (def.criteria === null) return [];
  const reached = reachCriteria(def.criteria, {
    fact: (c) => {
      const module = MODULE.exec(c.comment)?.[1];
      if (module !== undefined) return `module:${module}`;
      const m = RHEL_MAJOR.exec(c.comment);
      return m ? `major:${Number(m[1])}` : undefined;
    },
    wanted: (c) => pattern.test(c.comment),
  });
  const target = `major:${major}`;
  return reached.flatMap(({ criterion, contexts }) => {
    const modules = new Set<string | undefined>();
    for (const facts of contexts) {
      if (!facts.every((f) => !f.startsWith('major:') || f === target)) continue;
      const streams = facts.filter((f) => f.startsWith('module:'));
      // Two streams required at once (no such definition is known) name no one stream: left out.
      if (streams.length <= 1) modules.add(streams[0]?.slice('module:'.length));
    }
    return [...modules].map((module) => (module === undefined ? { criterion } : { criterion, module }));
  });
}

const ADVISORY_ID = /^\s*(RH[A-Z]A-\d{4}:\d+)/;

function advisoryName(def: OvalDefinition): string {
  const fromTitle = ADVISORY_ID.exec(def.title)?.[1];
  if (fromTitle) return fromTitle;
  const ref = findReference(def.references, 'RHSA')?.refId.trim();
  if (ref) return ref;
  const colon = def.title.indexOf(': ');
  return (colon < 0 ? def.title : def.title.slice(0, colon)).trim();
}

function cveName(def: OvalDefinition): string {
  return findReference(def.references, 'CVE')?.refId.trim() || CVE_ID_IN_TEXT.exec(def.title)?.[0] || '';
}

/**
 * `advisory/severity`, else the title's trailing "(…)": None → Negligible, Low, Moderate → Medium,
 * Important → High, Critical; anything else Unknown.
 */
const redHatWords = severityVocabulary({ none: 'Negligible', low: 'Low', moderate: 'Medium', important: 'High', critical: 'Critical' });

export function redHatSeverity(raw: string, title = ''): Severity {
  return redHatWords(raw.trim() || (/\((\w+)\)\s*$/.exec(title)?.[1] ?? ''));
}
