import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { unionOfFixes } from '../../model/fixes.js';
import { CVE_ID, severityVocabulary, type FixedIn, type Vulnerability } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { rpm } from '../rpm/version.js';

/**
 * Amazon Linux ALAS advisories from the yum repository's `updateinfo.xml`, read as
 * Clair read them. Chain: `mirror.list` → first mirror → `<mirror>/repodata/repomd.xml` →
 * the `updateinfo` entry's location (gzip) → this parser (fed the decompressed XML, streamed).
 *
 * Each `<update type="security">` becomes one vulnerability named by its ALAS id in the given
 * namespace (`amzn:2018.03` for AL1 images, `amzn:2`, `amzn:2023`). updateinfo only lists fixed
 * advisories, so every FixedIn entry has a version.
 *
 * The package list names each package once per architecture (`<package arch="x86_64" …>`), and an
 * advisory applies to an installed package of the same name and architecture (dnf's advisory
 * matching, libdnf Query::getAdvisoryPkgs: name, arch, then the version): each entry is limited to
 * the architectures listed with its version, so an i686 build of a package the advisory lists for
 * x86_64 only is not affected, and a noarch package only by a noarch entry. A package listed with
 * different versions for one architecture (or under one id twice) is affected below the higher. A
 * package without an arch attribute holds for every architecture.
 *
 * Metadata is `{ ALAS: { CVEs: [...] } }`: the CVE ids the advisory references, as Clair kept
 * them. Advisories that reference no CVE get `metadata: null`. Clair's NVD appender matches
 * vulnerabilities by name == CVE id, so ALAS-named records would get no CVSS from NVD on their
 * own: `cves` lists the same ids (in the advisory's order, each once, only well-formed CVE ids) for
 * CVE-keyed data (NVD, EPSS, KEV) to reach the advisory; it is left out when there are none.
 */
export async function parseAmazonUpdateinfo(input: Readable, namespace: 'amzn:1' | 'amzn:2' | 'amzn:2023' | string): Promise<SourceData> {
  const collector = new UpdateinfoCollector(namespace);
  const parser = new SaxesParser();
  parser.on('error', (err) => {
    throw new Error(`Amazon updateinfo (${namespace}): malformed XML: ${err.message}`, { cause: err });
  });
  parser.on('opentag', (tag) => collector.open(tag));
  parser.on('closetag', (tag) => collector.close(tag));
  parser.on('text', (text) => collector.text(text));
  parser.on('cdata', (text) => collector.text(text));

  const decoder = new TextDecoder('utf-8', { fatal: true });
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    parser.write(typeof chunk === 'string' ? chunk : decodeChunk(decoder, chunk, namespace));
  }
  parser.write(decodeChunk(decoder, undefined, namespace));
  parser.close();
  return collector.result();
}

function decodeChunk(decoder: TextDecoder, chunk: Buffer | undefined, namespace: string): string {
  try {
    return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
  } catch (err) {
    throw new Error(`Amazon updateinfo (${namespace}): input is not valid UTF-8`, { cause: err });
  }
}

/** low/medium/important/critical (any case); anything else is Unknown. */
export const amazonSeverity = severityVocabulary({ low: 'Low', medium: 'Medium', important: 'High', critical: 'Critical' });

/**
 * The advisory page on alas.aws.amazon.com. AL1 pages are `/<id>.html`; AL2 and AL2023 pages sit
 * under `/AL2/` and `/AL2023/` and drop the release digits from the id's prefix
 * (`ALAS2-2018-939` → `/AL2/ALAS-2018-939.html`, `ALAS2023-2023-223` → `/AL2023/ALAS-2023-223.html`),
 * which is what Clair built and what the site serves. Extras ids (`ALASKERNEL-5.10-2022-005`)
 * keep their spelling under the release's folder.
 */
export function amazonAdvisoryLink(id: string, namespace: string): string {
  const release = releaseOf(id, namespace);
  if (release === 'AL2023') return `https://alas.aws.amazon.com/AL2023/${id.replace(/^ALAS2023-/, 'ALAS-')}.html`;
  if (release === 'AL2') return `https://alas.aws.amazon.com/AL2/${id.replace(/^ALAS2-/, 'ALAS-')}.html`;
  return `https://alas.aws.amazon.com/${id}.html`;
}

function releaseOf(id: string, namespace: string): 'AL1' | 'AL2' | 'AL2023' {
  if (namespace === 'amzn:2023') return 'AL2023';
  if (namespace === 'amzn:2') return 'AL2';
  if (namespace.startsWith('amzn:')) return 'AL1';
  // An unusual namespace: fall back on the advisory id's prefix.
  if (id.startsWith('ALAS2023-')) return 'AL2023';
  if (id.startsWith('ALAS2-')) return 'AL2';
  return 'AL1';
}

/** `epoch:version-release`, the epoch left out when it is absent or zero. */
function fixedVersion(epoch: string | undefined, version: string | undefined, release: string | undefined): string | undefined {
  const v = version?.trim() ?? '';
  if (v === '') return undefined;
  const e = epoch?.trim() ?? '';
  const r = release?.trim() ?? '';
  const vr = r === '' ? v : `${v}-${r}`;
  return e === '' || /^0+$/.test(e) ? vr : `${e}:${vr}`;
}

function collapseWhitespace(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** Element name without a namespace prefix (updateinfo has none, but be lenient). */
function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

interface Advisory {
  id: string;
  severity: string;
  description: string;
  readonly cves: string[];
  /** The packages listed, one entry per listing (unionOfFixes makes them as few as it takes). */
  readonly fixed: FixedIn[];
}

type TextField = 'id' | 'severity' | 'description';

class UpdateinfoCollector {
  /** Local names of the open elements, root first. */
  private readonly stack: string[] = [];
  private current: Advisory | undefined;
  private field: TextField | undefined;
  private fieldText = '';
  private readonly byId = new Map<string, Advisory>();

  constructor(private readonly namespace: string) {}

  open(tag: SaxesTagPlain): void {
    const name = localName(tag.name);
    const depth = this.stack.length;
    this.stack.push(name);
    if (depth === 0) {
      if (name !== 'updates') {
        throw new Error(`Amazon updateinfo (${this.namespace}): not a yum updateinfo document (root element <${tag.name}>)`);
      }
      return;
    }
    if (depth === 1) {
      // <update>: only security advisories become vulnerabilities.
      if (name === 'update' && (tag.attributes['type'] ?? '').trim() === 'security') {
        this.current = { id: '', severity: '', description: '', cves: [], fixed: [] };
      }
      return;
    }
    const advisory = this.current;
    if (advisory === undefined) return;
    if (depth === 2 && (name === 'id' || name === 'severity' || name === 'description')) {
      this.field = name;
      this.fieldText = '';
    } else if (name === 'reference' && this.stack[2] === 'references') {
      const { type, id } = tag.attributes;
      if (type?.trim().toLowerCase() === 'cve' && id !== undefined) {
        const cve = id.trim();
        if (cve !== '' && !advisory.cves.includes(cve)) advisory.cves.push(cve);
      }
    } else if (name === 'package' && this.stack[2] === 'pkglist') {
      const { name: pkg, epoch, version, release, arch } = tag.attributes;
      const feature = pkg?.trim() ?? '';
      const evr = fixedVersion(epoch, version, release);
      if (feature === '' || evr === undefined || !rpm.valid(evr)) return;
      const arches = arch?.trim() ? { arches: [arch.trim()] } : {};
      advisory.fixed.push({ feature, version: evr, ...arches });
    }
  }

  text(text: string): void {
    if (this.field !== undefined) this.fieldText += text;
  }

  close(tag: SaxesTagPlain): void {
    const name = localName(tag.name);
    const depth = this.stack.length - 1;
    this.stack.pop();
    const advisory = this.current;
    if (advisory === undefined) return;
    if (depth === 2 && this.field === name) {
      advisory[this.field] = this.fieldText;
      this.field = undefined;
      this.fieldText = '';
    } else if (depth === 1) {
      this.current = undefined;
      this.finish(advisory);
    }
  }

  private finish(advisory: Advisory): void {
    advisory.id = advisory.id.trim();
    if (advisory.id === '') return; // nothing to name it by
    const earlier = this.byId.get(advisory.id);
    if (earlier === undefined) {
      this.byId.set(advisory.id, advisory);
      return;
    }
    // The same id twice: the first occurrence's text wins; fixes and CVEs are merged.
    for (const cve of advisory.cves) if (!earlier.cves.includes(cve)) earlier.cves.push(cve);
    earlier.fixed.push(...advisory.fixed);
  }

  result(): SourceData {
    if (this.stack.length !== 0) throw new Error(`Amazon updateinfo (${this.namespace}): document ended early`);
    const vulnerabilities: Vulnerability[] = [];
    for (const a of this.byId.values()) {
      const fixedIn = unionOfFixes(rpm.compare, a.fixed);
      vulnerabilities.push({
        namespace: this.namespace,
        name: a.id,
        description: collapseWhitespace(a.description),
        link: amazonAdvisoryLink(a.id, this.namespace),
        severity: amazonSeverity(a.severity),
        metadata: a.cves.length > 0 ? { ALAS: { CVEs: [...a.cves] } } : null,
        fixedIn,
        ...cveList(a.cves),
      });
    }
    return { namespaces: [this.namespace], vulnerabilities };
  }
}

/** `{ cves }` with the well-formed CVE ids of an advisory, or nothing when it has none. */
function cveList(references: readonly string[]): Pick<Vulnerability, 'cves'> {
  const cves = references.filter((id) => CVE_ID.test(id));
  return cves.length > 0 ? { cves } : {};
}

/** The first mirror of a yum `mirror.list`: first line that is neither blank nor a `#` comment. */
export function amazonMirrorUrl(mirrorList: string): string {
  for (const raw of mirrorList.split(/\r?\n/)) {
    const line = raw.trim();
    if (line !== '' && !line.startsWith('#')) return line;
  }
  throw new Error('Amazon mirror.list names no mirror');
}

/**
 * The `href` of the `<location>` inside `<data type="updateinfo">` of a yum `repodata/repomd.xml`
 * (relative to the mirror, e.g. `repodata/updateinfo.xml.gz`); undefined when there is none.
 * Throws on malformed XML.
 */
export function updateinfoLocation(repomd: string): string | undefined {
  const parser = new SaxesParser();
  const stack: string[] = [];
  let inUpdateinfo = false;
  let href: string | undefined;
  parser.on('error', (err) => {
    throw new Error(`repomd.xml: malformed XML: ${err.message}`, { cause: err });
  });
  parser.on('opentag', (tag) => {
    const name = localName(tag.name);
    if (stack.length === 1 && name === 'data') inUpdateinfo = (tag.attributes['type'] ?? '').trim() === 'updateinfo';
    else if (stack.length === 2 && name === 'location' && inUpdateinfo && href === undefined) {
      const value = tag.attributes['href']?.trim();
      if (value) href = value;
    }
    stack.push(name);
  });
  parser.on('closetag', () => {
    stack.pop();
    if (stack.length === 1) inUpdateinfo = false;
  });
  parser.write(repomd).close();
  return href;
}
