/**
 * Canonical's CVE-centric OVAL (`com.ubuntu.<codename>.cve.oval.xml`): one
 * `class="vulnerability"` definition per CVE, whose criteria name, per source package, a
 * `dpkginfo_test` → `dpkginfo_object` (binary names, literally or through a `constant_variable`)
 * and, for fixed packages, a `dpkginfo_state` (`evr` "less than" the fixed version).
 *
 * The criterion comment carries the Ubuntu CVE tracker status, written by Canonical's generator as
 * "<source> package in <codename> <status text>[ (note: '<note>')]." and read here as:
 *
 * | status (comment text)                                              | FixedIn                     |
 * |--------------------------------------------------------------------|-----------------------------|
 * | released: "was vulnerable but has been fixed (note: 'V')"          | the fixed version           |
 * | needed / needs-triage: "is affected and (may) need(s) fixing"       | null (no fix yet)           |
 * | deferred: "…a decision has been made to defer addressing it"        | null                        |
 * | pending: "…has been completed and is pending publication"           | null: the fix is not in the archive yet |
 * | ignored: "…a decision has been made to ignore this issue"           | null: affected, and no fix will come through the security pocket |
 * | released without a version: "…but no release version available"    | null (OVAL tests existence only) |
 * | not-affected: "is related to the CVE in some way and has been fixed", "is not affected" | left out |
 * | anything else                                                       | the state's version, else null |
 *
 * Package names. Tarsier's Ubuntu features are **source** packages (as Clair's were), while the OVAL
 * objects name binaries: each criterion yields the source package its comment names, with the
 * note's version (the source version Ubuntu's tracker records), else the state's `evr`. Binary
 * names are not kept: no layer feature could ever match them. Criteria whose test is not a
 * `dpkginfo_test` (the running-kernel `uname`/`variable` checks) are skipped: they test the host's
 * kernel, which an image does not carry.
 *
 * Tests, objects, states and variables follow the definitions in the document, so definitions are
 * reduced to compact entries as they stream by and resolved once the document ends.
 */
import type { Readable } from 'node:stream';
import { CVE_ID_IN_TEXT, severityVocabulary, type FixState, type Severity } from '../../model/vulnerability.js';
import type { SourceData } from '../../model/source-data.js';
import { dpkg } from '../dpkg/version.js';
import { findReference, normalizeText, VulnerabilityCollector, type VulnerabilityHead } from '../oval/collect.js';
import { readOval, type OvalDefinition, type OvalNode, type OvalTables } from '../oval/reader.js';

/** What the comment of one criterion says about one source package. */
export type UbuntuStatus = 'fixed' | 'unfixed' | 'not-affected' | 'unknown';

export interface UbuntuCriterionComment {
  readonly source: string;
  readonly status: UbuntuStatus;
  /** For an unfixed package, what Canonical decided: defer it (fix_deferred) or ignore it (will_not_fix). */
  readonly fixState?: FixState;
  /** The note's text when it is a version ("released (1.2-3)"), else undefined. */
  readonly noteVersion: string | undefined;
}

interface Entry {
  readonly testRef: string;
  readonly comment: UbuntuCriterionComment;
}

interface PendingDefinition {
  readonly head: VulnerabilityHead;
  readonly entries: readonly Entry[];
}

/** Parses one Canonical CVE OVAL document for the given namespace (e.g. `ubuntu:22.04`). */
export async function parseUbuntuOval(input: Readable, namespace: string): Promise<SourceData> {
  const pending: PendingDefinition[] = [];
  const tables = await readOval(input, {
    label: `Ubuntu OVAL (${namespace})`,
    tables: true,
    onDefinition: (def) => {
      const reduced = reduceDefinition(def, namespace);
      if (reduced) pending.push(reduced);
    },
  });
  const collector = new VulnerabilityCollector(dpkg);
  collector.addNamespace(namespace);
  for (const def of pending) resolveDefinition(def, tables, collector);
  return collector.result();
}

function reduceDefinition(def: OvalDefinition, namespace: string): PendingDefinition | undefined {
  if (def.class.trim().toLowerCase() !== 'vulnerability' || def.criteria === null) return undefined;
  const entries: Entry[] = [];
  const walk = (node: OvalNode): void => {
    if (node.negate || node.kind === 'extend_definition') return;
    if (node.kind === 'criteria') {
      for (const child of node.children) walk(child);
      return;
    }
    const comment = parseCriterionComment(node.comment);
    if (comment && comment.status !== 'not-affected') entries.push({ testRef: node.testRef, comment });
  };
  walk(def.criteria);
  if (entries.length === 0) return undefined;
  return {
    head: {
      namespace,
      name: ubuntuName(def),
      description: ubuntuDescription(def.description),
      link: ubuntuLink(def),
      severity: ubuntuSeverity(def.severity, def.title),
    },
    entries,
  };
}

function resolveDefinition(def: PendingDefinition, tables: OvalTables, collector: VulnerabilityCollector): void {
  for (const { testRef, comment } of def.entries) {
    const test = tables.tests.get(testRef);
    if (test && test.type !== 'dpkginfo_test') continue; // running-kernel checks
    let stateEvr: string | undefined;
    for (const ref of test?.stateRefs ?? []) {
      const evr = tables.states.get(ref)?.evr;
      if (evr && evr.operation === 'less than') {
        stateEvr = evr.value;
        break;
      }
    }
    const fixed = comment.status === 'fixed';
    const unknown = comment.status === 'unknown';
    const version = fixed ? (comment.noteVersion ?? stateEvr ?? null) : unknown ? (stateEvr ?? null) : null;
    collector.add(def.head, { feature: comment.source, version, ...(comment.fixState ? { state: comment.fixState } : {}) });
  }
}

const COMMENT_SOURCE = /^(?:\([^)]*\)\s*)?(?:The\s+)?'?([A-Za-z0-9][A-Za-z0-9+.~_-]*)'?(?:\s+package in\s+|\s*:\s*while related)/;
const NOTE = /\(note:\s*'([^']*)'\)/;

/**
 * Reads a criterion comment written by Canonical's OVAL generator; undefined when the comment
 * does not name a package (release checks, "Is kernel linux running?").
 */
export function parseCriterionComment(comment: string): UbuntuCriterionComment | undefined {
  const text = comment.trim();
  const match = COMMENT_SOURCE.exec(text);
  if (!match) return undefined;
  const source = match[1] as string;
  const rest = text.slice(match[0].length).toLowerCase();
  const note = NOTE.exec(text)?.[1]?.trim();
  // Canonical's generator treats a note as a version when it is one word starting with a digit.
  const noteVersion = note !== undefined && /^\d\S*$/.test(note) ? note : undefined;
  const status = commentStatus(rest);
  const fixState = status === 'unfixed' ? unfixedState(rest) : undefined;
  return { source, status, noteVersion, ...(fixState ? { fixState } : {}) };
}

/**
 * The Ubuntu CVE tracker's decisions on an unfixed package: `deferred` ("a
 * decision has been made to defer addressing it") and `ignored` ("…to ignore this issue", e.g.
 * end of standard support: no fix will come through the security pocket).
 */
function unfixedState(rest: string): FixState | undefined {
  if (rest.includes('decision has been made to defer')) return 'fix_deferred';
  if (rest.includes('decision has been made to ignore')) return 'will_not_fix';
  return undefined;
}

function commentStatus(rest: string): UbuntuStatus {
  if (
    rest.includes('is related to the cve in some way and has been fixed') ||
    rest.includes('is not affected') ||
    rest.includes('does not exist')
  ) {
    return 'not-affected';
  }
  if (
    rest.includes('needs fixing') ||
    rest.includes('may need fixing') ||
    rest.includes('defer') ||
    rest.includes('pending publication') ||
    rest.includes('ignore') ||
    rest.includes('no release version available') ||
    rest.includes('is not known')
  ) {
    return 'unfixed';
  }
  if (rest.includes('has been fixed')) return 'fixed';
  return 'unknown';
}

function ubuntuName(def: OvalDefinition): string {
  const ref = findReference(def.references, 'CVE')?.refId.trim();
  if (ref) return ref;
  const fromTitle = CVE_ID_IN_TEXT.exec(def.title)?.[0];
  if (fromTitle) return fromTitle;
  const first = def.references[0]?.refId.trim();
  return first || def.title.split(' on ')[0]?.trim() || def.id;
}

function ubuntuLink(def: OvalDefinition): string {
  const ref = findReference(def.references, 'CVE')?.refUrl.trim() ?? def.references[0]?.refUrl.trim();
  if (ref) return ref;
  const name = ubuntuName(def);
  return CVE_ID_IN_TEXT.test(name) ? `https://ubuntu.com/security/${name}` : '';
}

/**
 * Canonical's generator appends "Update Instructions: Run `sudo pro fix …`" and the binary list to
 * the description; that boilerplate is cut, and whitespace is collapsed.
 */
function ubuntuDescription(description: string): string {
  return normalizeText(description.replace(/\n\s*Update Instructions:[\s\S]*$/, ''));
}

/** `advisory/severity` (or the title's "… - <priority>" when absent): Untriaged → Unknown. */
const ubuntuWords = severityVocabulary({ negligible: 'Negligible', low: 'Low', medium: 'Medium', high: 'High', critical: 'Critical' });

export function ubuntuSeverity(raw: string, title = ''): Severity {
  return ubuntuWords(raw.trim() || (/ - (\w+)\.?\s*$/.exec(title)?.[1] ?? ''));
}
