/**
 * One Red Hat CSAF VEX document (Red Hat's guide: security-data-guidelines
 * `csaf-vex`) → the records it gives in `rhel:<major>`: one vulnerability per CVE and namespace,
 * named by the CVE, link `https://access.redhat.com/security/cve/<CVE>`, the same shape the OVAL v2
 * source (oval.ts) gives its unpatched definitions, so that this source can replace it.
 *
 * A product status entry (`<product>:<component>`) is resolved through the `default_component_of`
 * relationships to a product (its CPE: the namespace) and a component (its purl: the package).
 *
 * Namespaces (`rhelNamespace`): only the main stream of RHEL, `cpe:/o:redhat:enterprise_linux:N`
 * and its repositories `cpe:/{o,a}:redhat:enterprise_linux:N::<repo>` (baseos, appstream, crb,
 * server, …) → `rhel:N`. Everything else is left out: layered products (OpenShift, Satellite and
 * its clients, JBoss Core Services, Storage, …) and the RHEL streams with CPEs of their own (EUS,
 * AUS, E4S, TUS, ELS: `rhel_eus:9.0`, …). claircore keeps those apart by matching the CPEs of an
 * image's repositories; Tarsier keys data by `rhel:N` only, so an EUS fix (an older build than the
 * main stream's) mixed in would mark vulnerable packages fixed. The OVAL v2 source reads the same
 * scope (RHEL<N>/rhel-<N>…oval.xml, main stream).
 *
 * Packages: the component's purl, type rpm, namespace redhat. Binary rpm names, as the OVAL v2 source
 * and the rpm lister name features. A package built in a module stream is scoped to that stream
 * (FixedIn.module `postgresql:15`), as the OVAL source scopes its module advisories: it is named
 * as a component of the module (`pkg:rpmmod/redhat/postgresql@15:8100020240814101911:489197e6`,
 * itself a component of the product: the status id
 * `AppStream-8.10.0.Z.MAIN.EUS:postgresql:15:8100020240814101911:489197e6:<rpm>`), or by an
 * `rpmmod` qualifier on its rpm purl (`?rpmmod=postgresql:15:8100020240814101911:489197e6`), or,
 * unfixed, by a purl namespaced into the module (`pkg:rpmmod/redhat/postgresql:15/postgresql`: the
 * module's source package, which stands for its binaries as a source rpm does, below).
 * A module itself (`pkg:rpmmod/redhat/postgresql@15:…`) names no package. Left out, for fixed
 * entries: source rpms (arch=src/nosrc: their binaries are listed beside them with the same
 * version; a fixed source rpm still wins over an unfixed entry of its name, below). An unfixed
 * component is often named by its source rpm alone (`pkg:rpm/redhat/vim?arch=src`): the entry is
 * marked as naming a source package (FixedIn.source), and stands for every binary built from it
 * (vim-minimal, vim-enhanced, vim-common), as claircore matches such records by each package's
 * source name. A component without a purl (documents written before Red Hat added them) is read
 * from its name: `name-E:V-R.arch` or a bare package name (a binary).
 *
 * States (FixedIn.state), from product_status and remediations (Red Hat's guide, "Remediations"):
 * - `fixed` → the fixed version: purl version with its `epoch` qualifier (0 when absent), as
 *   `E:V-R` (the OVAL source's EVRs carry the epoch too). Fixed without a version: left out.
 * - `known_affected` → by the remediation naming the product: `none_available` "Affected" (or
 *   none at all) → affected; `none_available` "Deferred" (or "Fix deferred") → `fix_deferred`;
 *   `no_fix_planned` "Will not fix" and "Out of support scope" → `will_not_fix` (Red Hat plans no
 *   fix for either; the OVAL source has them all as plain "affected").
 * - `known_not_affected` → `not_affected` (version null: the store and matcher must honour the
 *   state, or it would read as "affected, no fix").
 * - `under_investigation`: left out, as claircore does (Red Hat has not said the package is
 *   affected).
 * When one package is named twice in one namespace (the main stream fixed it in two minor
 * releases: `AppStream-9.2.0.Z.MAIN.EUS` and `AppStream-9.3.0.Z.MAIN`), a fix wins over any other
 * state and the highest fixed version is kept: below it, a package lacks one of Red Hat's fixes,
 * which is what the OVAL file's one definition per advisory reported (and claircore's one record
 * per product). Between unfixed states: affected, fix_deferred, will_not_fix, not_affected.
 *
 * Architectures: a fixed product id names a binary rpm of one architecture
 * (`curl-0:7.76.1-26.el9_3.2.x86_64`, the purl's `arch` qualifier), so a fixed entry is limited to
 * the architectures its products name (the highest fix of each): a build of an architecture no
 * fixed product names (an i686 curl, which RHEL 9 does not ship) is not affected by the record, as
 * OVAL's arch patterns say for the same packages. Unfixed and not-affected entries, often named
 * by their source rpm, hold for every architecture.
 *
 * Severity: the highest `threats[impact]` of the namespace's products, else the document's
 * `aggregate_severity` (Low, Moderate → Medium, Important → High, Critical, as the OVAL source).
 * Description: the `description` note, whitespace collapsed. Metadata null (CVSS comes from NVD).
 * A document with `tracking.status` "deleted" gives nothing and says so.
 */
import { unionOfFixes } from '../../model/fixes.js';
import { severityRank, type FixedIn, type FixState, type Severity, type Vulnerability } from '../../model/vulnerability.js';
import { compareNames, compareStrings, normalizeText } from '../oval/collect.js';
import { rpm } from '../rpm/version.js';
import { redHatSeverity } from './oval.js';

/** What one VEX document says. */
export interface RedHatVexDocument {
  /** `document.tracking.id` (the CVE id). */
  readonly id: string;
  /** `tracking.status` "deleted": the document was withdrawn. */
  readonly deleted: boolean;
  /** Sorted by namespace, then name; FixedIn sorted by feature. */
  readonly vulnerabilities: readonly Vulnerability[];
}

/** Parses one CSAF VEX document (JSON text). Throws on text that is not JSON. */
export function parseRedHatVex(json: string | Buffer): RedHatVexDocument {
  const doc = (JSON.parse(typeof json === 'string' ? json : json.toString('utf8')) ?? {}) as Csaf;
  const id = text(doc.document?.tracking?.id);
  if (text(doc.document?.tracking?.status).toLowerCase() === 'deleted') return { id, deleted: true, vulnerabilities: [] };
  const tree = new ProductTree(doc.product_tree);
  const aggregate = text(doc.document?.aggregate_severity?.text);
  const vulnerabilities = list<CsafVulnerability>(doc.vulnerabilities)
    .flatMap((v) => vulnerabilitiesOf(v, tree, id, aggregate))
    .sort((a, b) => compareNames(a.namespace, b.namespace) || compareNames(a.name, b.name));
  return { id, deleted: false, vulnerabilities };
}

/**
 * The namespace of a product CPE: `rhel:N` for the main stream of RHEL N (any repository), else
 * undefined. Accepts CPE 2.2 URIs (what Red Hat writes) and 2.3 formatted strings.
 */
export function rhelNamespace(cpe: string): string | undefined {
  const fields = cpe.trim().toLowerCase().split(':');
  let rest: string[];
  if (fields[0] !== 'cpe') return undefined;
  if (fields[1] === '2.3') rest = fields.slice(2);
  else if (fields[1]?.startsWith('/')) rest = [fields[1].slice(1), ...fields.slice(2)];
  else return undefined;
  const [part, vendor, product, version] = rest;
  if ((part !== 'o' && part !== 'a') || vendor !== 'redhat' || product !== 'enterprise_linux') return undefined;
  return version !== undefined && /^\d+$/.test(version) ? `rhel:${Number(version)}` : undefined;
}

// --- The document, as far as it is read (every field may be missing in a malformed document).

interface Csaf {
  document?: {
    aggregate_severity?: { text?: unknown };
    tracking?: { id?: unknown; status?: unknown };
  };
  product_tree?: { branches?: unknown; relationships?: unknown };
  vulnerabilities?: unknown;
}

interface CsafProduct {
  product_id?: unknown;
  name?: unknown;
  product_identification_helper?: { cpe?: unknown; purl?: unknown };
}

interface CsafBranch {
  name?: unknown;
  product?: CsafProduct;
  branches?: unknown;
}

interface CsafRelationship {
  category?: unknown;
  full_product_name?: { product_id?: unknown };
  product_reference?: unknown;
  relates_to_product_reference?: unknown;
}

interface CsafVulnerability {
  cve?: unknown;
  notes?: unknown;
  product_status?: Record<string, unknown>;
  remediations?: unknown;
  threats?: unknown;
}

interface CsafProductGroup {
  category?: unknown;
  details?: unknown;
  product_ids?: unknown;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const list = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

// --- Product tree.

interface Product {
  readonly name: string;
  readonly cpe: string;
  readonly purl: string;
}

/** A package as a status entry names it. */
interface Component {
  readonly name: string;
  /** `E:V-R`, or null when the entry carries no version (unfixed components). */
  readonly version: string | null;
  readonly source: boolean;
  /** The binary rpm's architecture, when the entry names one. */
  readonly arch?: string;
  /** The module stream (`name:stream`) it was built in. */
  readonly module?: string;
}

/** Relationships can nest (a component of a module of a product); claircore follows up to five. */
const MAX_RELATIONSHIP_DEPTH = 5;

class ProductTree {
  private readonly products = new Map<string, Product>();
  /** full product id → [component product id, product id]. */
  private readonly relationships = new Map<string, readonly [string, string]>();

  constructor(tree: Csaf['product_tree']) {
    const walk = (branches: unknown) => {
      for (const branch of list<CsafBranch>(branches)) {
        const p = branch?.product;
        const id = text(p?.product_id);
        if (id !== '') {
          const helper = p?.product_identification_helper;
          this.products.set(id, { name: text(p?.name) || text(branch.name) || id, cpe: text(helper?.cpe), purl: text(helper?.purl) });
        }
        walk(branch?.branches);
      }
    };
    walk(tree?.branches);
    for (const r of list<CsafRelationship>(tree?.relationships)) {
      const id = text(r?.full_product_name?.product_id);
      if (text(r?.category) !== 'default_component_of' || id === '') continue;
      this.relationships.set(id, [text(r.product_reference), text(r.relates_to_product_reference)]);
    }
  }

  /** The namespace and package of a product status entry, or undefined when it is out of scope. */
  resolve(id: string): { namespace: string; component: Component } | undefined {
    const relationship = this.relationships.get(id);
    if (!relationship) return undefined;
    let [componentId, productId] = relationship;
    for (let depth = 0; depth < MAX_RELATIONSHIP_DEPTH; depth++) {
      const inner = this.relationships.get(componentId);
      if (!inner) break;
      componentId = inner[0];
    }
    let module: string | undefined;
    for (let depth = 0; depth < MAX_RELATIONSHIP_DEPTH; depth++) {
      const outer = this.relationships.get(productId);
      if (!outer) break;
      module ??= moduleOfPurl(this.products.get(outer[0])?.purl ?? '');
      productId = outer[1];
    }
    const namespace = rhelNamespace(this.products.get(productId)?.cpe ?? '');
    const product = this.products.get(componentId);
    if (namespace === undefined || !product) return undefined;
    const component = product.purl !== '' ? componentOfPurl(product.purl) : componentOfName(product.name);
    if (!component) return undefined;
    const stream = component.module ?? module;
    return { namespace, component: stream !== undefined ? { ...component, module: stream } : component };
  }
}

/** `name:stream` of a module's purl (`pkg:rpmmod/redhat/postgresql@15:8100020240814101911:489197e6`); else undefined. */
function moduleOfPurl(purl: string): string | undefined {
  const p = parsePurl(purl);
  if (!p || p.type !== 'rpmmod' || p.namespace.toLowerCase() !== 'redhat') return undefined;
  return moduleStream(`${p.name}:${p.version}`);
}

/** `name:stream` of a module's `name:stream[:version:context]`; undefined when it names no stream. */
function moduleStream(nsvc: string): string | undefined {
  const [name = '', stream = ''] = nsvc.split(':');
  return name !== '' && stream !== '' ? `${name}:${stream}` : undefined;
}

/**
 * The rpm a purl names: `pkg:rpm/redhat/<name>[@<version>][?arch=…&epoch=…&rpmmod=…]`, or a package
 * namespaced into a module stream, `pkg:rpmmod/redhat/<name:stream>/<name>`; modules themselves and
 * other types: undefined.
 */
function componentOfPurl(purl: string): Component | undefined {
  const p = parsePurl(purl);
  if (!p || p.name === '') return undefined;
  const [vendor = '', ...inModule] = p.namespace.split('/');
  if (vendor.toLowerCase() !== 'redhat') return undefined;
  let module: string | undefined;
  if (p.type === 'rpmmod') {
    module = inModule.length === 1 ? moduleStream(inModule[0]!) : undefined;
    if (module === undefined) return undefined;
  } else if (p.type !== 'rpm' || inModule.length > 0) {
    return undefined;
  } else if (p.qualifiers.has('rpmmod')) {
    module = moduleStream(p.qualifiers.get('rpmmod')!);
    if (module === undefined) return undefined;
  }
  const arch = p.qualifiers.get('arch') ?? '';
  const version = p.version === '' ? null : `${p.qualifiers.get('epoch') || '0'}:${p.version}`;
  return {
    name: p.name,
    version,
    // A component namespaced into a module is the module's source package (Red Hat's component
    // `ruby:2.6/ruby`), as `arch=src` names one outside modules.
    source: arch === 'src' || arch === 'nosrc' || p.type === 'rpmmod',
    ...(arch !== '' ? { arch } : {}),
    ...(module !== undefined ? { module } : {}),
  };
}

const NEVRA = /^(.+)-(\d+):([^-:\s]+)-([^-:\s]+)\.([A-Za-z0-9_]+)$/;
const PACKAGE_NAME = /^[A-Za-z0-9_+][A-Za-z0-9._+-]*$/;

/** A component without a purl: `name-E:V-R.arch` (a fixed build) or a bare package name. */
function componentOfName(name: string): Component | undefined {
  const m = NEVRA.exec(name);
  if (m) return { name: m[1]!, version: `${m[2]}:${m[3]}-${m[4]}`, source: m[5] === 'src' || m[5] === 'nosrc', arch: m[5]! };
  return PACKAGE_NAME.test(name) ? { name, version: null, source: false } : undefined;
}

interface Purl {
  readonly type: string;
  readonly namespace: string;
  readonly name: string;
  readonly version: string;
  readonly qualifiers: ReadonlyMap<string, string>;
}

/** A package URL (purl-spec): `pkg:type/namespace/name@version?qualifiers#subpath`. */
function parsePurl(purl: string): Purl | undefined {
  if (!purl.startsWith('pkg:')) return undefined;
  let rest = purl.slice(4);
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const question = rest.indexOf('?');
  const query = question >= 0 ? rest.slice(question + 1) : '';
  if (question >= 0) rest = rest.slice(0, question);
  const at = rest.lastIndexOf('@');
  const version = at >= 0 ? rest.slice(at + 1) : '';
  if (at >= 0) rest = rest.slice(0, at);
  const segments = rest.replace(/^\/+/, '').split('/');
  if (segments.length < 2) return undefined;
  try {
    const qualifiers = new Map<string, string>();
    for (const pair of query.split('&')) {
      const eq = pair.indexOf('=');
      if (eq > 0) qualifiers.set(pair.slice(0, eq).toLowerCase(), decodeURIComponent(pair.slice(eq + 1)));
    }
    return {
      type: segments[0]!.toLowerCase(),
      namespace: segments.slice(1, -1).map(decodeURIComponent).join('/'),
      name: decodeURIComponent(segments[segments.length - 1]!),
      version: decodeURIComponent(version),
      qualifiers,
    };
  } catch {
    return undefined; // a malformed percent-escape
  }
}

// --- Vulnerabilities.

const LINK = 'https://access.redhat.com/security/cve/';

/** Precedence when one package is named twice in a namespace: the first state listed wins. */
const PRECEDENCE: readonly FixState[] = ['fixed', 'affected', 'fix_deferred', 'will_not_fix', 'not_affected'];

/**
 * What a namespace's products say of one package name, in or outside a module stream; a fixed
 * one's versions are in the namespace's `fixed`.
 */
interface Entry {
  readonly feature: string;
  readonly module: string | undefined;
  readonly state: FixState;
  /** It names a source rpm. */
  readonly source: boolean;
}

function vulnerabilitiesOf(v: CsafVulnerability, tree: ProductTree, documentId: string, aggregate: string): Vulnerability[] {
  const name = text(v?.cve).trim() || documentId;
  if (name === '') return [];
  const remediations = byProduct(v.remediations);
  const threats = byProduct(v.threats);
  const namespaces = new Map<string, { entries: Map<string, Entry>; fixed: FixedIn[]; severity: Severity }>();

  const add = (productId: string, status: 'fixed' | 'known_affected' | 'known_not_affected') => {
    const resolved = tree.resolve(productId);
    if (!resolved) return;
    const { namespace, component } = resolved;
    const version = status === 'fixed' ? component.version : null;
    if (status === 'fixed' && (version === null || !rpm.valid(version))) return;
    const state =
      status === 'fixed' ? 'fixed' : status === 'known_not_affected' ? 'not_affected' : unfixedState(remediations.get(productId));
    const entry: Entry = { feature: component.name, module: component.module, state, source: component.source };
    let group = namespaces.get(namespace);
    if (!group) namespaces.set(namespace, (group = { entries: new Map(), fixed: [], severity: 'Unknown' }));
    // A fixed source rpm gives no entry (its binaries do), but wins over an unfixed one of its name.
    if (version !== null && !component.source) {
      group.fixed.push({
        feature: component.name,
        version,
        ...(component.arch ? { arches: [component.arch] } : {}),
        ...(component.module !== undefined ? { module: component.module } : {}),
      });
    }
    // A module's package and a package of the same name built outside modules are different packages.
    const key = JSON.stringify([component.module ?? null, component.name]);
    const current = group.entries.get(key);
    const winner = !current || wins(entry, current) ? entry : current;
    // An unfixed package named both ways (the binary kernel, the source kernel) is named by its
    // source, which stands for the binary of its name too (built from it) and for the others.
    const source = winner.state !== 'fixed' && (entry.source || current?.source === true);
    group.entries.set(key, { ...winner, source });
    for (const t of threats.get(productId) ?? []) {
      if (text(t.category) !== 'impact') continue;
      const severity = redHatSeverity(text(t.details));
      if (severityRank(severity) > severityRank(group.severity)) group.severity = severity;
    }
  };
  for (const id of list<unknown>(v.product_status?.fixed)) add(text(id), 'fixed');
  for (const id of list<unknown>(v.product_status?.known_affected)) add(text(id), 'known_affected');
  for (const id of list<unknown>(v.product_status?.known_not_affected)) add(text(id), 'known_not_affected');

  const description = normalizeText(
    text(list<{ category?: unknown; text?: unknown }>(v.notes).find((n) => n?.category === 'description')?.text),
  );
  return [...namespaces].map(([namespace, group]) => ({
    namespace,
    name,
    description,
    link: `${LINK}${name}`,
    severity: group.severity !== 'Unknown' ? group.severity : redHatSeverity(aggregate),
    metadata: null,
    // A name with a fixed binary is fixed (fixed wins): its entries are those binaries' fixes.
    fixedIn: [
      ...unionOfFixes(rpm.compare, group.fixed),
      ...[...group.entries.values()].filter((e) => e.state !== 'fixed').map(unfixedEntry),
    ].sort((a, b) => compareStrings(a.feature, b.feature) || compareStrings(a.module ?? '', b.module ?? '')),
  }));
}

/** An unfixed entry as FixedIn: affected is implied by the version null (model/vulnerability.ts). */
function unfixedEntry(e: Entry): FixedIn {
  return {
    feature: e.feature,
    version: null,
    ...(e.module !== undefined ? { module: e.module } : {}),
    ...(e.state !== 'affected' ? { state: e.state } : {}),
    ...(e.source ? { source: true as const } : {}),
  };
}

function wins(next: Entry, current: Entry): boolean {
  return PRECEDENCE.indexOf(next.state) < PRECEDENCE.indexOf(current.state);
}

/** The state of a known_affected product from the remediations naming it (the most affected one). */
function unfixedState(remediations: readonly CsafProductGroup[] | undefined): FixState {
  let best: FixState | undefined;
  for (const r of remediations ?? []) {
    const category = text(r.category);
    let state: FixState | undefined;
    if (category === 'none_available') state = /defer/i.test(text(r.details)) ? 'fix_deferred' : 'affected';
    else if (category === 'no_fix_planned') state = 'will_not_fix';
    if (state && (best === undefined || PRECEDENCE.indexOf(state) < PRECEDENCE.indexOf(best))) best = state;
  }
  return best ?? 'affected';
}

/** remediations or threats, indexed by the product ids they name. */
function byProduct(groups: unknown): Map<string, CsafProductGroup[]> {
  const index = new Map<string, CsafProductGroup[]>();
  for (const g of list<CsafProductGroup>(groups)) {
    if (!g || typeof g !== 'object') continue;
    for (const id of list<unknown>(g.product_ids)) {
      const key = text(id);
      const found = index.get(key);
      if (found) found.push(g);
      else index.set(key, [g]);
    }
  }
  return index;
}
