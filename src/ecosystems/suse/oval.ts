/**
 * SUSE's CVE-indexed OVAL: `suse.linux.enterprise.server.<N>-affected.xml`,
 * `suse.linux.enterprise.micro.<v>-affected.xml`, `opensuse.leap.<v>-affected.xml` and the files
 * without `-affected` (same shape, fixed and not-affected issues only). One `class="vulnerability"`
 * definition per CVE covers every product and service pack of the file; `class="patch"` (the
 * `-patch` files, one definition per SUSE-SU) is skipped.
 *
 * Namespaces come from the product criterion that holds beside each package criterion (the
 * criteria tree's alternatives, as for Red Hat and Oracle):
 *
 * | criterion comment ("… is installed")                      | namespace           |
 * |-----------------------------------------------------------|---------------------|
 * | SUSE Linux Enterprise Server 15 SP6                       | `sles:15.6`         |
 * | SUSE Linux Enterprise Server 15 (no SP: 15 GA)            | `sles:15`           |
 * | SUSE Linux Enterprise Server 15 SP1-LTSS (-BCL, -ESPOS…)   | `sles:15.1-ltss` (`-bcl`, …) |
 * | SUSE Linux Enterprise Module for Basesystem 15 SP6        | `sles:15.6`         |
 * | SUSE Linux Enterprise Micro 5.5, SUSE Linux Micro 6.1     | `sle-micro:5.5`, `sle-micro:6.1` |
 * | openSUSE Leap 15.6                                        | `opensuse-leap:15.6` |
 *
 * A plain "Server 15" is GA: SUSE's own test behind it is `sles-release is ==15`, and a 15 GA
 * image says VERSION_ID="15". Modules are where SLE 15 ships most packages (openssl and glibc are
 * in Basesystem), and a SLES image installs them, so they count for SLES; only modules versioned
 * like SLES itself (a two-digit major) do, which leaves out e.g. "Module for SUSE Manager Server
 * 4.3". The LTSS/BCL/ESPOS variants of a service pack are products of their own, installed on top
 * of it (`sles-ltss-release` beside `sles-release`; see products.ts): a variant's entries go to its
 * namespace only, and the plain service pack's (and its modules') to the plain namespace and to
 * each variant namespace of it the document names, where they are alternatives of the variant's,
 * as on a system with the variant both hold. A variant SUSE tests by the plain release package
 * alone (SLES 15 SP1-BCL: `sles-release is ==15.1`) holds wherever the service pack does, so its
 * entries go where the plain service pack's go, as an OVAL evaluator would apply them. A service
 * pack past its general support is named only through its variants: a plain image of it gets no
 * entry from them. Desktop, SAP, HPC, Manager and other products are not SLES images and are
 * ignored.
 *
 * Package criteria are "<name>-<version>-<release> is installed" and "<name> is not affected";
 * they are read through their rpminfo test, object and state:
 *
 * | state                                  | FixedIn                               |
 * |----------------------------------------|---------------------------------------|
 * | evr "less than" E:V-R                  | fixed in E:V-R (state as written)     |
 * | evr "greater than" E:V-R (0:0-0 in the `-affected` files)  | version null, affected above E:V-R |
 * | comment "<name> is not affected"       | version null, state `not_affected`    |
 * | evr "equals", "greater than or equal" (kernel livepatch alternatives) | left out |
 *
 * A state's `<arch>` (a pattern such as `(aarch64|ppc64le|s390x|x86_64)`, on kernel packages)
 * limits the entry to those package architectures. When the state is missing, the version is
 * taken from the comment after "<object name>-" (the comment names the fixed NEVR, without the
 * epoch, which is why the state is preferred; it is written with rpm's implied epoch `0:`, as the
 * states write every version). SUSE's OVAL carries no "will not fix" or
 * "deferred" state (those are in its CSAF VEX), so no other states are produced.
 *
 * - Name: the CVE id of the title. Description: whitespace collapsed.
 * - Link: the `source="SUSE CVE"` reference, else https://www.suse.com/security/cve/<id>/.
 * - Severity (`advisory/severity`): None → Negligible, Low, Moderate → Medium, Important → High,
 *   Critical; anything else (or none) Unknown.
 * - A feature named twice for one (namespace, CVE): the entries are alternatives (OVAL's OR of
 *   products), so the highest fix, no fix over a fix, affected over not affected.
 *
 * Tests, objects and states follow the definitions in the document, so definitions are reduced to
 * their package criteria as they stream by and resolved once the document ends.
 */
import type { Readable } from 'node:stream';
import { CVE_ID_IN_TEXT, severityVocabulary, type FixedIn } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { rpm } from '../rpm/version.js';
import { reachCriteria } from '../oval/criteria.js';
import { findReference, normalizeText, VulnerabilityCollector, type VulnerabilityHead } from '../oval/collect.js';
import { readOval, type OvalDefinition, type OvalTables } from '../oval/reader.js';
import { stateArches } from '../oval/states.js';
import { withoutProductVariant } from '../catalog.js';
import { PLAIN_RELEASE_PACKAGE, slesNamespace } from './products.js';

/** The distributions SUSE's OVAL feeds. */
export type SuseDistribution = 'sles' | 'sle-micro' | 'opensuse-leap';

/**
 * The namespaces one file is read for: `release` and its service packs (`sles` + `15` keeps
 * `sles:15` and `sles:15.6`, not `sles:150`). Each product file is its own updater part, and a
 * namespace named by two parts would have each withdraw the other's records.
 */
export interface SuseScope {
  readonly distribution: SuseDistribution;
  readonly release: string;
}

const SERVER =
  /^\s*SUSE Linux Enterprise (?:Server|Module for [A-Za-z0-9 ]+?) (\d{2,})(?:\.(\d+))?(?: SP(\d+))?(-[A-Z]+)? is installed\s*$/;
const MICRO = /^\s*SUSE Linux (?:Enterprise )?Micro (\d+\.\d+) is installed\s*$/;
const LEAP = /^\s*openSUSE Leap (\d+\.\d+) is installed\s*$/;
/** A package criterion: one word before "is installed" / "is not affected". */
const PACKAGE = /^\s*(\S+) is (installed|not affected)\s*$/;
/** "<name>-<version>-<release>" when the object is unknown. */
const NEVR = /^(.+)-([^-]+-[^-]+)$/;
const HAS_EPOCH = /^\d+:/;

interface Entry {
  readonly testRef: string;
  readonly subject: string;
  readonly notAffected: boolean;
  /** The namespaces of the products it holds with (`sles:15.4`, `sles:15.4-ltss`). */
  readonly products: readonly string[];
}

interface PendingDefinition {
  readonly head: Omit<VulnerabilityHead, 'namespace'>;
  readonly entries: readonly Entry[];
}

/** Parses one SUSE OVAL document; without a scope every SUSE namespace it names is kept. */
export async function parseSuseOval(input: Readable, scope?: SuseScope): Promise<SourceData> {
  const pending: PendingDefinition[] = [];
  const namespaces = new Set<string>();
  const productTests = new Map<string, Set<string>>();
  const inScope = (namespace: string): boolean => scope === undefined || withinScope(namespace, scope);
  const tables = await readOval(input, {
    label: scope ? `SUSE OVAL (${scope.distribution}:${scope.release})` : 'SUSE OVAL',
    tables: true,
    onDefinition: (def) => {
      const reduced = reduceDefinition(def, inScope, namespaces, productTests);
      if (reduced) pending.push(reduced);
    },
  });
  const collector = new VulnerabilityCollector(rpm);
  for (const namespace of namespaces) collector.addNamespace(namespace);
  const variants = variantsOf(namespaces);
  const heldByPlain = variantsHeldByPlain(productTests, tables);
  for (const def of pending) resolveDefinition(def, tables, collector, variants, heldByPlain);
  return collector.result();
}

function withinScope(namespace: string, scope: SuseScope): boolean {
  const prefix = `${scope.distribution}:`;
  if (!namespace.startsWith(prefix)) return false;
  const release = withoutProductVariant(namespace).slice(prefix.length);
  return release === scope.release || release.startsWith(`${scope.release}.`);
}

/** The namespace of the product a criterion comment names (`sles:15.4`, `sles:15.4-ltss`); undefined for anything else. */
export function productOf(comment: string): string | undefined {
  const server = SERVER.exec(comment);
  if (server) {
    const [, major, minor, sp, variant] = server;
    // "Server 16.0" carries its minor; "Server 15 SP6" its service pack; "Server 15" is GA.
    const release = minor !== undefined ? `${major}.${minor}` : sp !== undefined ? `${major}.${Number(sp)}` : (major as string);
    return slesNamespace(release, variant?.slice(1));
  }
  const micro = MICRO.exec(comment);
  if (micro) return `sle-micro:${micro[1]}`;
  const leap = LEAP.exec(comment);
  if (leap) return `opensuse-leap:${leap[1]}`;
  return undefined;
}

/**
 * The product one alternative of the criteria holds on: its product facts name one service pack,
 * with at most one variant (a variant needs its service pack, so "SP4 and SP4-LTSS" is the
 * variant); undefined for none of ours, or two at once (cannot hold).
 */
function productOfAlternative(facts: readonly string[]): string | undefined {
  const plain = new Set(facts.map(withoutProductVariant));
  const variants = new Set(facts.filter((f) => withoutProductVariant(f) !== f));
  if (plain.size !== 1 || variants.size > 1) return undefined;
  return variants.size === 1 ? [...variants][0] : [...plain][0];
}

/** The variant namespaces of each plain product among namespaces (`sles:15.4` → [`sles:15.4-ltss`]). */
function variantsOf(namespaces: ReadonlySet<string>): ReadonlyMap<string, readonly string[]> {
  const variants = new Map<string, string[]>();
  for (const namespace of namespaces) {
    const plain = withoutProductVariant(namespace);
    if (plain !== namespace) variants.set(plain, [...(variants.get(plain) ?? []), namespace]);
  }
  return variants;
}

function reduceDefinition(
  def: OvalDefinition,
  inScope: (ns: string) => boolean,
  namespaces: Set<string>,
  productTests: Map<string, Set<string>>,
): PendingDefinition | undefined {
  if (def.class.trim().toLowerCase() !== 'vulnerability' || def.criteria === null) return undefined;
  const reached = reachCriteria(def.criteria, {
    fact: (c) => {
      const product = productOf(c.comment);
      return product && inScope(product) ? product : undefined;
    },
    wanted: (c) => PACKAGE.test(c.comment) && productOf(c.comment) === undefined,
  });
  const entries: Entry[] = [];
  for (const { criterion, contexts } of reached) {
    const products = new Set<string>();
    for (const facts of contexts) {
      const product = productOfAlternative(facts);
      if (product !== undefined) products.add(product);
    }
    if (products.size === 0) continue;
    const [, subject, verb] = PACKAGE.exec(criterion.comment) as RegExpExecArray;
    entries.push({
      testRef: criterion.testRef,
      subject: subject as string,
      notAffected: verb === 'not affected',
      products: [...products],
    });
  }
  // Product criteria of ours with no package beside them still say which namespaces the file covers.
  collectProductNamespaces(def, inScope, namespaces, productTests);
  const name = cveName(def);
  if (entries.length === 0 || name === '') return undefined;
  return {
    head: {
      name,
      description: normalizeText(def.description),
      link: findReference(def.references, 'SUSE CVE')?.refUrl.trim() || `https://www.suse.com/security/cve/${name}/`,
      severity: suseSeverity(def.severity),
    },
    entries,
  };
}

/** Adds the products the definition names to namespaces, and the tests each is named by to productTests. */
function collectProductNamespaces(
  def: OvalDefinition,
  inScope: (ns: string) => boolean,
  namespaces: Set<string>,
  productTests: Map<string, Set<string>>,
): void {
  const walk = (node: NonNullable<OvalDefinition['criteria']>['children'][number]): void => {
    if (node.kind === 'criteria') {
      for (const child of node.children) walk(child);
      return;
    }
    const product = node.negate ? undefined : productOf(node.comment);
    if (!product || !inScope(product)) return;
    namespaces.add(product);
    let tests = productTests.get(product);
    if (!tests) productTests.set(product, (tests = new Set()));
    // A product named through another definition has no test of its own to read: never the plain one's.
    tests.add(node.kind === 'criterion' ? node.testRef : '');
  };
  if (def.criteria) walk(def.criteria);
}

/**
 * The variants whose "is installed" criterion SUSE tests by the plain service pack's release
 * package alone: "SUSE Linux Enterprise Server 15 SP1-BCL is installed" is the test
 * `sles-release is ==15.1`, which every SP1 system passes, so an OVAL evaluator applies that
 * variant's criteria to a plain SP1 system too. Variants tested by a release package of their
 * own (`sles-ltss-release is ==15.1`) hold only where it is installed.
 */
function variantsHeldByPlain(productTests: ReadonlyMap<string, ReadonlySet<string>>, tables: OvalTables): ReadonlySet<string> {
  const held = new Set<string>();
  for (const [product, tests] of productTests) {
    if (withoutProductVariant(product) === product) continue;
    const objectNames = [...tests].map((ref) => {
      const test = tables.tests.get(ref);
      return test ? tables.objects.get(test.objectRef)?.names[0] : undefined;
    });
    if (objectNames.every((name) => name?.toLowerCase() === PLAIN_RELEASE_PACKAGE)) held.add(product);
  }
  return held;
}

/**
 * Each package entry under each of its products: a plain service pack's also under its variants
 * (SP4's under SP4-LTSS, whose systems have SP4 installed), a variant's under the variant only,
 * unless SUSE tests the variant as the plain service pack (heldByPlain), where it goes wherever
 * the plain service pack's entries go.
 */
function resolveDefinition(
  def: PendingDefinition,
  tables: OvalTables,
  collector: VulnerabilityCollector,
  variants: ReadonlyMap<string, readonly string[]>,
  heldByPlain: ReadonlySet<string>,
): void {
  const productsOf = (product: string): string[] => [product, ...(variants.get(product) ?? [])];
  for (const entry of def.entries) {
    const fixedIn = resolveEntry(entry, tables);
    if (!fixedIn) continue;
    const namespaces = new Set(
      entry.products.flatMap((product) => (heldByPlain.has(product) ? productsOf(withoutProductVariant(product)) : productsOf(product))),
    );
    for (const namespace of namespaces) collector.add({ ...def.head, namespace }, fixedIn);
  }
}

/** What one package criterion says, read through its test; undefined when it says nothing usable. */
function resolveEntry(entry: Entry, tables: OvalTables): FixedIn | undefined {
  const test = tables.tests.get(entry.testRef);
  if (test && test.type !== 'rpminfo_test') return undefined;
  const objectName = test ? tables.objects.get(test.objectRef)?.names[0] : undefined;
  if (entry.notAffected) return { feature: objectName ?? entry.subject, version: null, state: 'not_affected' };

  let evr: { value: string; operation: string } | undefined;
  let arches: string[] | undefined;
  for (const ref of test?.stateRefs ?? []) {
    const state = tables.states.get(ref);
    if (state?.evr) {
      evr = state.evr;
      arches = stateArches(state.arch);
      break;
    }
  }
  if (evr) {
    if (!objectName) return undefined;
    const limited = arches ? { arches } : {};
    if (evr.operation === 'less than') return { feature: objectName, version: evr.value, ...limited };
    // The -affected files' unfixed packages: any version above 0:0-0 (which is not itself affected).
    if (evr.operation === 'greater than') return { feature: objectName, version: null, affectedAbove: evr.value, ...limited };
    return undefined; // livepatch alternatives ("equals", "greater than or equal")
  }
  // No state to read (absent from the document): the comment names the fixed NEVR.
  if (objectName) {
    return entry.subject.startsWith(`${objectName}-`)
      ? { feature: objectName, version: withEpoch(entry.subject.slice(objectName.length + 1)) }
      : undefined;
  }
  const nevr = NEVR.exec(entry.subject);
  return nevr ? { feature: nevr[1] as string, version: withEpoch(nevr[2] as string) } : undefined;
}

/** A version from a comment with rpm's implied epoch written out, as SUSE's states write theirs. */
function withEpoch(version: string): string {
  return HAS_EPOCH.test(version) ? version : `0:${version}`;
}

function cveName(def: OvalDefinition): string {
  return (
    CVE_ID_IN_TEXT.exec(def.title)?.[0] ?? def.references.map((r) => CVE_ID_IN_TEXT.exec(r.refId)?.[0]).find((id) => id !== undefined) ?? ''
  );
}

/** `advisory/severity`: None → Negligible, Low, Moderate → Medium, Important → High, Critical; else Unknown. */
export const suseSeverity = severityVocabulary({
  none: 'Negligible',
  low: 'Low',
  moderate: 'Medium',
  important: 'High',
  critical: 'Critical',
});
