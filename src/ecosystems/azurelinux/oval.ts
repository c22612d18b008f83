/**
 * Microsoft's OVAL for Azure Linux and CBL-Mariner (github.com/microsoft/AzureLinuxVulnerabilityData:
 * `azurelinux-3.0-oval.xml`, `cbl-mariner-2.0-oval.xml`), as read by trivy (vuln-list-update
 * `mariner/`, trivy-db `vulnsrc/azure`) and vunnel (`providers/mariner`). One `class="vulnerability"`
 * definition per (CVE, source package), whose metadata carries the CVE reference (`source="CVE"`,
 * an NVD link), `<patchable>` and `<severity>` directly under `<metadata>`, and whose criteria
 * (one AND) name rpminfo tests → an object (the package name) and a state (`evr`, an
 * `evr_string` with its epoch and dist tag: `0:2.6.7-3.azl3`). The criterion comment carries the
 * version without epoch and dist tag, so the state is read.
 *
 * | state operation        | patchable          | FixedIn                                     |
 * |------------------------|--------------------|---------------------------------------------|
 * | `less than` E:V-R      | `true`             | fixed in E:V-R (as written)                 |
 * | `less than or equal` E:V-R | `false` (or `true`) | version null, affected through E:V-R (itself included): later versions are not |
 * | `less than`            | `false`            | version null (every version: the fix is not published) |
 * | any                    | `Not Applicable`   | version null, state `not_affected` ("This CVE either no longer is or was never applicable"; trivy and vunnel drop these) |
 * | `greater than` E:V-R beside one of the above (golang's release tracks) | — | a lower bound: only versions after E:V-R are affected |
 *
 * A definition's criteria are one AND, so its bounds make one entry; a `greater than or equal` or
 * any other lower bound is not read (the entry then reaches below it). Several definitions for one
 * CVE and package (xorg-x11-server "less than 1.20.10-6" and "less than 1.20.10-4") are each tested
 * on their own, as OVAL does: the package is affected when one of them says so, so below the
 * higher fix (model/fixes.ts).
 *
 * - Whitespace inside a state's evr is dropped (`0: 1.20.10-1.azl3` in the 3.0 file); an evr rpm
 *   cannot read is left out.
 * - Name: the CVE reference's id. Link: its URL (NVD), else NVD's page for the id.
 *   Description: the definition's, whitespace collapsed. Metadata null.
 * - Severity (`metadata/severity`): Critical, High, Medium, Low (the words Microsoft writes);
 *   anything else, or none, Unknown.
 */
import type { Readable } from 'node:stream';
import { severityVocabulary, type FixedIn } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { rpm } from '../rpm/version.js';
import { findReference, normalizeText, VulnerabilityCollector, type VulnerabilityHead } from '../oval/collect.js';
import { readOval, type OvalDefinition, type OvalNode, type OvalTables } from '../oval/reader.js';

/** The namespaces of Microsoft's files: `mariner:2.0` (CBL-Mariner 2.0), `azurelinux:3.0`. */
const NAMESPACE = /^(?:mariner|azurelinux):\d+\.\d+$/;

const azureLinuxLink = (id: string): string => `https://nvd.nist.gov/vuln/detail/${id}`;

/** Critical, High, Medium, Low (any case); anything else Unknown. */
export const azureLinuxSeverity = severityVocabulary({ critical: 'Critical', high: 'High', medium: 'Medium', low: 'Low' });

interface PendingDefinition {
  readonly head: VulnerabilityHead;
  readonly testRefs: readonly string[];
  /** `metadata/patchable`, lower case. */
  readonly patchable: string;
}

/** Parses one of Microsoft's OVAL files for its namespace (`azurelinux:3.0`, `mariner:2.0`). */
export async function parseAzureLinuxOval(input: Readable, namespace: string): Promise<SourceData> {
  if (!NAMESPACE.test(namespace))
    throw new Error(`Azure Linux OVAL: namespace ${JSON.stringify(namespace)} is not like azurelinux:3.0 or mariner:2.0`);
  const pending: PendingDefinition[] = [];
  const tables = await readOval(input, {
    label: `Azure Linux OVAL (${namespace})`,
    tables: true,
    onDefinition: (def) => {
      const reduced = reduceDefinition(def, namespace);
      if (reduced) pending.push(reduced);
    },
  });

  const collector = new VulnerabilityCollector(rpm);
  collector.addNamespace(namespace);
  for (const def of pending) {
    const fixedIn = resolveDefinition(def.testRefs, tables, def.patchable);
    if (fixedIn) collector.add(def.head, fixedIn);
  }
  return collector.result();
}

function reduceDefinition(def: OvalDefinition, namespace: string): PendingDefinition | undefined {
  if (def.class.trim().toLowerCase() !== 'vulnerability' || def.criteria === null) return undefined;
  const reference = findReference(def.references, 'CVE');
  const name = reference?.refId.trim() ?? '';
  if (name === '') return undefined;
  const testRefs: string[] = [];
  const walk = (node: OvalNode): void => {
    // A negated criterion says the opposite of its test; Microsoft writes none.
    if (node.negate || node.kind === 'extend_definition') return;
    if (node.kind === 'criteria') for (const child of node.children) walk(child);
    else testRefs.push(node.testRef);
  };
  walk(def.criteria);
  if (testRefs.length === 0) return undefined;
  return {
    head: {
      namespace,
      name,
      description: normalizeText(def.description),
      link: reference?.refUrl.trim() || azureLinuxLink(name),
      severity: azureLinuxSeverity(def.severity),
    },
    testRefs,
    patchable: def.patchable.toLowerCase(),
  };
}

/**
 * The FixedIn entry of one definition: its package, from the rpminfo tests' object, and the bounds
 * of their evr states together (one AND); undefined when no upper bound can be read.
 */
function resolveDefinition(testRefs: readonly string[], tables: OvalTables, patchable: string): FixedIn | undefined {
  let feature = '';
  let upper: { operation: string; evr: string } | undefined;
  let above: string | undefined;
  for (const ref of testRefs) {
    const test = tables.tests.get(ref);
    if (!test || test.type !== 'rpminfo_test') continue;
    const name = tables.objects.get(test.objectRef)?.names[0] ?? '';
    if (name === '') continue;
    for (const stateRef of test.stateRefs) {
      const state = tables.states.get(stateRef)?.evr;
      if (!state) continue;
      // An evr never holds whitespace; one 3.0 state reads "0: 1.20.10-1.azl3" (golang, CVE-2023-39323).
      const evr = state.value.replace(/\s+/g, '');
      if (!rpm.valid(evr)) continue;
      feature ||= name;
      if (state.operation === 'less than' || state.operation === 'less than or equal') upper ??= { operation: state.operation, evr };
      else if (state.operation === 'greater than') above ??= evr;
    }
  }
  if (feature === '' || upper === undefined) return undefined;
  if (patchable === 'not applicable') return { feature, version: null, state: 'not_affected' };
  const bounded = above !== undefined ? { affectedAbove: above } : {};
  if (upper.operation === 'less than or equal') return { feature, version: null, affectedThrough: upper.evr, ...bounded };
  if (patchable === 'false') return { feature, version: null, ...bounded };
  return { feature, version: upper.evr, ...bounded };
}
