import { createHash } from 'node:crypto';
import { PackageURL } from 'packageurl-js';
import { TarsierError } from '../errors.js';
import { readPackageUrl, type SbomPackage, type SkipReason } from './package-url.js';

/**
 * SBOMs as input (SPEC §14): a CycloneDX (1.4–1.6) or SPDX (2.2, 2.3) JSON document read into the
 * packages Tarsier matches, the format told by the content. Every component (CycloneDX, nested ones
 * included) or package (SPDX) with a package URL Tarsier can match becomes a package; every other is
 * listed in `skipped` with why, so nothing is dropped unseen. The document's subject (CycloneDX
 * `metadata.component`, the packages an SPDX document DESCRIBES) is what the SBOM is of, not one of
 * its packages.
 */

export { SKIP_REASONS, type SbomPackage, type SkipReason } from './package-url.js';

export type SbomFormat = 'cyclonedx' | 'spdx';

/** Each format's media type: what an SBOM is posted as, and its image record carries. */
export const SBOM_MEDIA_TYPES: Readonly<Record<SbomFormat, string>> = {
  cyclonedx: 'application/vnd.cyclonedx+json',
  spdx: 'application/spdx+json',
};

/** A component or package not read as a package. */
export interface SkippedComponent {
  /** Where it is in the document: `components[3].components[0]`, `packages[7]`. */
  readonly at: string;
  readonly name?: string;
  /** Its package URL, when it has one. */
  readonly purl?: string;
  readonly reason: SkipReason;
  readonly why: string;
}

export interface Sbom {
  /** SPDX `name`; CycloneDX `metadata.component`'s `name@version`; undefined when the document names nothing. */
  readonly name: string | undefined;
  /** `sha256:<hex>` of the document's bytes as given. */
  readonly digest: string;
  readonly format: SbomFormat;
  /** `1.6` (CycloneDX specVersion), `2.3` (SPDX's SPDX-2.3). */
  readonly specVersion: string;
  /** In document order, each namespace, name and version once. */
  readonly packages: readonly SbomPackage[];
  readonly skipped: readonly SkippedComponent[];
}

/**
 * The document cannot be read as an SBOM: not JSON, neither format, a version not read, or a field
 * of the wrong shape, which `field` names (`components[3].purl`). A client error (bad_request, 400).
 */
export class MalformedSbom extends TarsierError {
  constructor(
    readonly field: string | undefined,
    message: string,
    cause?: unknown,
  ) {
    super('bad_request', message, { cause });
    this.name = 'MalformedSbom';
  }
}

const CYCLONEDX_VERSIONS = ['1.4', '1.5', '1.6'];
const SPDX_VERSIONS = ['SPDX-2.2', 'SPDX-2.3'];
/** SPDX 2.2 spells the category with a hyphen; some writers (and SPDX 3's names) with an underscore. */
const PURL_CATEGORIES = ['PACKAGE-MANAGER', 'PACKAGE_MANAGER'];
const SUPPORTED = 'Tarsier reads CycloneDX 1.4–1.6 and SPDX 2.2/2.3 JSON documents';

/** What a walk over the document finds of one component or package. */
interface Entry {
  at: string;
  name: string | undefined;
  /** The package's name as the document writes it: CycloneDX `group/name`, SPDX `name`. */
  fullName: string | undefined;
  version: string | undefined;
  purls: EntryPurl[];
}

/** A package URL as parsed, or why its type's rules reject it. */
type EntryPurl = { text: string; purl: PackageURL } | { text: string; invalid: string };

type Json = Record<string, unknown>;

export function readSbom(text: string | Buffer): Sbom {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const doc = parseJson(bytes.toString('utf8'));
  if ('bomFormat' in doc) return assemble(digest, 'cyclonedx', readCycloneDx(doc));
  if ('spdxVersion' in doc) return assemble(digest, 'spdx', readSpdx(doc));
  throw new MalformedSbom(undefined, `the document has neither bomFormat (CycloneDX) nor spdxVersion (SPDX): ${SUPPORTED}`);
}

function parseJson(text: string): Json {
  const body = text.replace(/^\uFEFF/, '');
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (err) {
    const start = body.trimStart();
    const what = start.startsWith('<') ? 'XML' : /^SPDXVersion:/m.test(start) ? 'SPDX tag-value' : 'not JSON';
    throw new MalformedSbom(undefined, `the document is ${what}: ${SUPPORTED}`, err);
  }
  if (!isObject(doc)) throw new MalformedSbom(undefined, `the document is not a JSON object: ${SUPPORTED}`);
  return doc;
}

function assemble(digest: string, format: SbomFormat, read: { name: string | undefined; specVersion: string; entries: Entry[] }): Sbom {
  const packages: SbomPackage[] = [];
  const skipped: SkippedComponent[] = [];
  const seen = new Set<string>();
  for (const entry of read.entries) {
    const found = packageOf(entry);
    if ('reason' in found) {
      skipped.push({ at: entry.at, ...(entry.name === undefined ? {} : { name: entry.name }), ...found });
      continue;
    }
    const key = JSON.stringify([found.namespace, found.name, found.version]);
    if (seen.has(key)) continue;
    seen.add(key);
    packages.push(found);
  }
  return { name: read.name, digest, format, specVersion: read.specVersion, packages, skipped };
}

/** The first of an entry's package URLs Tarsier can match; else why not, for the first (or that it has none). */
function packageOf(entry: Entry): SbomPackage | { purl?: string; reason: SkipReason; why: string } {
  let firstSkip: { purl: string; reason: SkipReason; why: string } | undefined;
  for (const entryPurl of entry.purls) {
    const { text } = entryPurl;
    if ('invalid' in entryPurl) {
      firstSkip ??= { purl: text, reason: 'invalid-purl', why: `${text} breaks its type's rules: ${entryPurl.invalid}` };
      continue;
    }
    const r = readPackageUrl(text, entryPurl.purl, { name: entry.fullName, version: entry.version });
    if ('package' in r) return r.package;
    firstSkip ??= { purl: text, reason: r.reason, why: r.why };
  }
  return firstSkip ?? { reason: 'no-purl', why: 'it has no package URL' };
}

// CycloneDX: bomFormat, specVersion, metadata.component (the subject), components[] with their
// own components[] (assemblies, a package's nested dependencies).

function readCycloneDx(doc: Json): { name: string | undefined; specVersion: string; entries: Entry[] } {
  if (doc.bomFormat !== 'CycloneDX') throw new MalformedSbom('bomFormat', `bomFormat is ${JSON.stringify(doc.bomFormat)}, not "CycloneDX"`);
  const specVersion = doc.specVersion;
  if (typeof specVersion !== 'string' || !CYCLONEDX_VERSIONS.includes(specVersion)) {
    throw new MalformedSbom('specVersion', `specVersion ${JSON.stringify(specVersion)} is not read: ${SUPPORTED}`);
  }
  const metadata = optionalObject(doc.metadata, 'metadata');
  const subject = metadata === undefined ? undefined : optionalObject(metadata.component, 'metadata.component');
  const subjectName = subject === undefined ? undefined : optionalString(subject, 'name', 'metadata.component');
  const subjectVersion = subject === undefined ? undefined : optionalString(subject, 'version', 'metadata.component');
  const name = subjectName === undefined ? undefined : subjectVersion === undefined ? subjectName : `${subjectName}@${subjectVersion}`;
  const entries: Entry[] = [];
  walkComponents(doc.components, 'components', entries);
  return { name, specVersion, entries };
}

function walkComponents(value: unknown, at: string, entries: Entry[]): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value)) throw new MalformedSbom(at, `${at} is not an array`);
  value.forEach((item: unknown, i) => {
    const here = `${at}[${i}]`;
    if (!isObject(item)) throw new MalformedSbom(here, `${here} is not an object`);
    const purl = optionalString(item, 'purl', here);
    const name = optionalString(item, 'name', here);
    const group = optionalString(item, 'group', here);
    entries.push({
      at: here,
      name,
      fullName: group && name !== undefined ? `${group}/${name}` : name,
      version: optionalString(item, 'version', here),
      purls: purl === undefined || purl.trim() === '' ? [] : [parsePurl(purl, `${here}.purl`)],
    });
    walkComponents(item.components, `${here}.components`, entries);
  });
}

// SPDX: spdxVersion, name, documentDescribes and DESCRIBES relationships (the subject), packages[]
// with externalRefs[] whose referenceType is purl.

function readSpdx(doc: Json): { name: string | undefined; specVersion: string; entries: Entry[] } {
  const version = doc.spdxVersion;
  if (typeof version !== 'string' || !SPDX_VERSIONS.includes(version)) {
    throw new MalformedSbom('spdxVersion', `spdxVersion ${JSON.stringify(version)} is not read: ${SUPPORTED}`);
  }
  const subjects = spdxSubjects(doc);
  const entries: Entry[] = [];
  const packages = optionalArray(doc.packages, 'packages');
  packages.forEach((item: unknown, i) => {
    const here = `packages[${i}]`;
    if (!isObject(item)) throw new MalformedSbom(here, `${here} is not an object`);
    const id = optionalString(item, 'SPDXID', here);
    const purls = optionalArray(item.externalRefs, `${here}.externalRefs`).flatMap((ref: unknown, j) => {
      const at = `${here}.externalRefs[${j}]`;
      if (!isObject(ref)) throw new MalformedSbom(at, `${at} is not an object`);
      if (ref.referenceType !== 'purl' || !PURL_CATEGORIES.includes(String(ref.referenceCategory))) return [];
      const locator = ref.referenceLocator;
      if (typeof locator !== 'string') throw new MalformedSbom(`${at}.referenceLocator`, `${at}.referenceLocator is not a package URL`);
      return [parsePurl(locator, `${at}.referenceLocator`)];
    });
    if (id !== undefined && subjects.has(id)) return;
    const name = optionalString(item, 'name', here);
    entries.push({ at: here, name, fullName: name, version: optionalString(item, 'versionInfo', here), purls });
  });
  return { name: optionalString(doc, 'name', ''), specVersion: version.slice('SPDX-'.length), entries };
}

/** The SPDXIDs the document describes: documentDescribes, and DESCRIBES (DESCRIBED_BY) relationships of the document. */
function spdxSubjects(doc: Json): Set<string> {
  const self = optionalString(doc, 'SPDXID', '') ?? 'SPDXRef-DOCUMENT';
  const subjects = new Set<string>();
  optionalArray(doc.documentDescribes, 'documentDescribes').forEach((id: unknown, i) => {
    if (typeof id !== 'string') throw new MalformedSbom(`documentDescribes[${i}]`, `documentDescribes[${i}] is not a string`);
    subjects.add(id);
  });
  optionalArray(doc.relationships, 'relationships').forEach((r: unknown, i) => {
    if (!isObject(r)) throw new MalformedSbom(`relationships[${i}]`, `relationships[${i}] is not an object`);
    const { spdxElementId: from, relatedSpdxElement: to, relationshipType: type } = r;
    if (type === 'DESCRIBES' && from === self && typeof to === 'string') subjects.add(to);
    if (type === 'DESCRIBED_BY' && to === self && typeof from === 'string') subjects.add(from);
  });
  return subjects;
}

/**
 * A package URL: one that does not parse (no `pkg:` scheme, no type or name) makes the document
 * malformed; one that parses but breaks its type's rules (a Maven purl without a group) is a
 * component Tarsier cannot read, skipped with packageurl-js's reason.
 */
function parsePurl(text: string, at: string): EntryPurl {
  let type, name;
  try {
    [type, , name] = PackageURL.parseString(text);
  } catch (err) {
    throw notPackageUrl(text, at, err);
  }
  if (!type || !name) throw notPackageUrl(text, at, new Error('it has no type or no name'));
  try {
    return { text, purl: PackageURL.fromString(text) };
  } catch (err) {
    return { text, invalid: err instanceof Error ? err.message : String(err) };
  }
}

function notPackageUrl(text: string, at: string, err: unknown): MalformedSbom {
  const why = err instanceof Error ? err.message : String(err);
  return new MalformedSbom(at, `${at} is not a package URL (${JSON.stringify(text)}: ${why})`, err);
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function optionalObject(value: unknown, at: string): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new MalformedSbom(at, `${at} is not an object`);
  return value;
}

function optionalArray(value: unknown, at: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new MalformedSbom(at, `${at} is not an array`);
  return value;
}

/** `object[key]` when it is a string; undefined when absent; an error naming `<at>.<key>` otherwise. */
function optionalString(object: Json, key: string, at: string): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  const field = at === '' ? key : `${at}.${key}`;
  if (typeof value !== 'string') throw new MalformedSbom(field, `${field} is not a string`);
  return value;
}
