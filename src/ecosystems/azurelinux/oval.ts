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
 * | `less than or equal`   | `false` (or `true`)| version null: affected, no fix known        |
 * | any                    | `false`            | version null                                |
 * | any                    | `Not Applicable`   | version null, state `not_affected` ("This CVE either no longer is or was never applicable"; trivy and vunnel drop these) |
 * | `greater than` (a lower bound beside a `less than`, golang's release tracks) | — | ignored: a fixed-in version cannot say "introduced in"; versions below the bound read as affected, as in trivy |
 *
 * - Whitespace inside a state's evr is dropped (`0: 1.20.10-1.azl3` in the 3.0 file); an evr rpm
 *   cannot read is left out.
 * - Name: the CVE reference's id. Link: its URL (NVD), else NVD's page for the id.
 *   Description: the definition's, whitespace collapsed. Metadata null.
 * - Severity (`metadata/severity`): Critical, High, Medium, Low (the words Microsoft writes);
 *   anything else, or none, Unknown.
 * - Definitions are per package, so one CVE can have several (one per package, or two for one
 *   package: golang's release tracks). A package named twice for one CVE keeps the lowest fixed
 *   version (Clair's rule for a single fixed-in), a fix over no fix, and affected over not affected.
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
    for (const fixedIn of resolveDefinition(def.testRefs, tables, def.patchable)) {
      collector.add(def.head, fixedIn.feature, fixedIn.version, fixedIn.state);
    }
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

/** The FixedIn entries of one definition's package criteria (rpminfo tests with an evr state). */
function resolveDefinition(testRefs: readonly string[], tables: OvalTables, patchable: string): FixedIn[] {
  const found: FixedIn[] = [];
  for (const ref of testRefs) {
    const test = tables.tests.get(ref);
    if (!test || test.type !== 'rpminfo_test') continue;
    const feature = tables.objects.get(test.objectRef)?.names[0] ?? '';
    if (feature === '') continue;
    for (const stateRef of test.stateRefs) {
      const evr = tables.states.get(stateRef)?.evr;
      if (!evr) continue;
      const fixedIn = readState(feature, evr.operation, evr.value, patchable);
      if (fixedIn) found.push(fixedIn);
    }
  }
  return found;
}

function readState(feature: string, operation: string, version: string, patchable: string): FixedIn | undefined {
  if (operation !== 'less than' && operation !== 'less than or equal') return undefined; // a lower bound
  if (patchable === 'not applicable') return { feature, version: null, state: 'not_affected' };
  if (patchable === 'false' || operation === 'less than or equal') return { feature, version: null };
  // An evr never holds whitespace; one 3.0 state reads "0: 1.20.10-1.azl3" (golang, CVE-2023-39323).
  const evr = version.replace(/\s+/g, '');
  return rpm.valid(evr) ? { feature, version: evr } : undefined;
}
