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
 *
 * The shared reader records `advisory/severity` (Red Hat's place), not these two metadata
 * children, so they are picked up by a small second SAX pass over the same chunks, keyed by
 * definition id.
 */
import { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { SaxesParser, type SaxesTagPlain } from 'saxes';
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
  readonly id: string;
  readonly head: VulnerabilityHead;
  readonly testRefs: readonly string[];
}

/** Parses one of Microsoft's OVAL files for its namespace (`azurelinux:3.0`, `mariner:2.0`). */
export async function parseAzureLinuxOval(input: Readable, namespace: string): Promise<SourceData> {
  if (!NAMESPACE.test(namespace))
    throw new Error(`Azure Linux OVAL: namespace ${JSON.stringify(namespace)} is not like azurelinux:3.0 or mariner:2.0`);
  const metadata = new MetadataReader();
  const pending: PendingDefinition[] = [];
  const tables = await readOval(Readable.from(metadata.tap(input)), {
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
    const patchable = (metadata.byId.get(def.id)?.patchable ?? '').toLowerCase();
    const severity = azureLinuxSeverity(metadata.byId.get(def.id)?.severity ?? '');
    for (const fixedIn of resolveDefinition(def.testRefs, tables, patchable)) {
      collector.add({ ...def.head, severity }, fixedIn.feature, fixedIn.version, fixedIn.state);
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
    id: def.id,
    head: {
      namespace,
      name,
      description: normalizeText(def.description),
      link: reference?.refUrl.trim() || azureLinuxLink(name),
      severity: 'Unknown', // set from the metadata pass once the document is read
    },
    testRefs,
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

/**
 * Picks `metadata/severity` and `metadata/patchable` of each definition out of the chunks as they
 * pass to the shared reader. It stops at the end of `<definitions>`; on malformed input it stops
 * quietly, since the shared reader reports the error with its label.
 */
class MetadataReader {
  readonly byId = new Map<string, { severity: string; patchable: string }>();
  private readonly parser = new SaxesParser<{ xmlns: false }>({ xmlns: false });
  private readonly decoder = new TextDecoder('utf-8');
  private readonly path: string[] = [];
  private current: { id: string; severity: string; patchable: string } | null = null;
  private capture: 'severity' | 'patchable' | null = null;
  private text = '';
  private done = false;

  constructor() {
    this.parser.on('opentag', (tag) => this.open(tag));
    this.parser.on('closetag', () => this.close());
    this.parser.on('text', (text) => {
      if (this.capture) this.text += text;
    });
  }

  async *tap(input: AsyncIterable<Buffer | string>): AsyncGenerator<Buffer | string> {
    for await (const chunk of input) {
      this.feed(typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true }));
      yield chunk;
    }
  }

  private feed(text: string): void {
    if (this.done) return;
    try {
      this.parser.write(text);
    } catch {
      this.done = true;
    }
  }

  private open(tag: SaxesTagPlain): void {
    const depth = this.path.length;
    const name = localName(tag.name);
    this.path.push(name);
    if (depth === 2 && name === 'definition' && this.path[1] === 'definitions') {
      this.current = { id: tag.attributes.id ?? '', severity: '', patchable: '' };
    } else if (this.current && depth === 4 && this.path[3] === 'metadata' && (name === 'severity' || name === 'patchable')) {
      this.capture = name;
      this.text = '';
    }
  }

  private close(): void {
    const depth = this.path.length - 1;
    const name = this.path.pop();
    if (this.capture && depth === 4) {
      if (this.current) this.current[this.capture] = this.text.trim();
      this.capture = null;
    } else if (depth === 2 && name === 'definition' && this.current) {
      this.byId.set(this.current.id, { severity: this.current.severity, patchable: this.current.patchable });
      this.current = null;
    } else if (depth === 1 && name === 'definitions') {
      this.done = true;
    }
  }
}

function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}
