/**
 * A streaming reader for OVAL 5 definition documents (`<oval_definitions>`), shared by the
 * Ubuntu, Red Hat and Oracle parsers.
 *
 * The feeds are tens to hundreds of MB uncompressed, so the document is read with a SAX parser
 * (saxes) and never held whole: each `<definition>` is handed to `onDefinition` as soon as it
 * closes, and the caller keeps only what it needs from it. Tests, objects, states and variables
 * come after the definitions in a document; they are collected into compact maps only when the
 * caller asks for them (`tables: true`), because Red Hat and Oracle data is read from the criteria
 * comments alone while Ubuntu's package names live in objects and variables.
 *
 * Elements are matched by local name (the part after any `prefix:`): Canonical writes
 * `linux-def:dpkginfo_test`, Red Hat's v1 files write `<rpminfo_test xmlns="…#linux">`.
 */
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { SaxesParser, type SaxesTagPlain } from 'saxes';

export interface OvalReference {
  readonly source: string;
  readonly refId: string;
  readonly refUrl: string;
}

/** `advisory/affected/resolution` (Red Hat unpatched data): a fix state and its components. */
export interface OvalResolution {
  readonly state: string;
  readonly components: readonly string[];
}

export interface OvalCriterion {
  readonly kind: 'criterion';
  readonly testRef: string;
  readonly comment: string;
  readonly negate: boolean;
}

export interface OvalExtendDefinition {
  readonly kind: 'extend_definition';
  readonly definitionRef: string;
  readonly comment: string;
  readonly negate: boolean;
}

export interface OvalCriteria {
  readonly kind: 'criteria';
  /** AND (the OVAL default), OR, ONE or XOR, upper-cased. */
  readonly operator: string;
  readonly negate: boolean;
  readonly children: readonly OvalNode[];
}

export type OvalNode = OvalCriteria | OvalCriterion | OvalExtendDefinition;

export interface OvalDefinition {
  readonly id: string;
  /** `class` attribute: vulnerability, patch, inventory, compliance, miscellaneous. */
  readonly class: string;
  readonly title: string;
  /** As written (not trimmed or re-spaced). */
  readonly description: string;
  readonly references: readonly OvalReference[];
  /** `metadata/affected/platform` texts, trimmed. */
  readonly platforms: readonly string[];
  /** `metadata/advisory/severity` (Red Hat's place), else `metadata/severity` (Microsoft's), trimmed; '' when absent. */
  readonly severity: string;
  /** `metadata/patchable` (Microsoft: true, false, Not Applicable), trimmed; '' when absent. */
  readonly patchable: string;
  readonly resolutions: readonly OvalResolution[];
  /** `metadata/advisory/affected_cpe_list/cpe` texts, trimmed. */
  readonly affectedCpes: readonly string[];
  /** The top-level `<criteria>`, null when the definition has none. */
  readonly criteria: OvalCriteria | null;
}

export interface OvalTest {
  /** Local element name, e.g. `dpkginfo_test`, `rpminfo_test`, `variable_test`. */
  readonly type: string;
  readonly objectRef: string;
  readonly stateRefs: readonly string[];
}

export interface OvalObject {
  readonly type: string;
  /** Literal `<name>` texts. */
  readonly names: readonly string[];
  /** `<name var_ref="…">`: the names are the values of that variable. */
  readonly varRefs: readonly string[];
}

export interface OvalState {
  readonly type: string;
  /** `<evr>` (dpkginfo/rpminfo states) or `<value>` (variable_state); null when the state has neither. */
  readonly evr: { readonly value: string; readonly operation: string; readonly datatype: string } | null;
  /** `<arch>` (rpminfo states: the package architectures, usually a `pattern match`); null when absent. */
  readonly arch: { readonly value: string; readonly operation: string } | null;
}

export interface OvalTables {
  readonly tests: ReadonlyMap<string, OvalTest>;
  readonly objects: ReadonlyMap<string, OvalObject>;
  readonly states: ReadonlyMap<string, OvalState>;
  /** `constant_variable` id → its `<value>` texts. */
  readonly variables: ReadonlyMap<string, readonly string[]>;
}

export interface ReadOvalOptions {
  /** Names the source in error messages, e.g. "Ubuntu OVAL (ubuntu:22.04)". */
  readonly label: string;
  /** Called once per `<definition>`, in document order, as soon as it is complete. */
  readonly onDefinition: (definition: OvalDefinition) => void;
  /**
   * Collect tests, objects, states and variables (default false: they are skipped); or only the
   * tests `keepTest` accepts, with the objects, states and variables they refer to (a document's
   * tables come in that order, after the definitions, which say what is wanted).
   */
  readonly tables?: boolean | { readonly keepTest: (id: string) => boolean };
}

/**
 * Reads an OVAL definitions document from `input` (UTF-8). Resolves with the tables (empty unless
 * `tables` was set) once the whole document has been read; rejects with an Error naming the source
 * on malformed XML, invalid UTF-8, a document that is not `<oval_definitions>`, or an exception
 * thrown by `onDefinition` (labelled with the definition id); a read error of `input` is passed
 * through as is.
 */
export async function readOval(input: Readable, options: ReadOvalOptions): Promise<OvalTables> {
  const reader = new OvalReader(options);
  const parser = new SaxesParser<{ xmlns: false; position: true }>({ xmlns: false, position: true });
  parser.on('opentag', (tag) => reader.open(tag));
  parser.on('closetag', (tag) => reader.close(tag));
  parser.on('text', (text) => reader.text(text));
  parser.on('cdata', (text) => reader.text(text));

  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  const write = (text: string): void => {
    try {
      parser.write(text);
    } catch (err) {
      throw wrap(options.label, err);
    }
  };
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    write(typeof chunk === 'string' ? chunk : decode(decoder, chunk, options.label));
    // Tests, objects, states and variables follow the definitions and can be most of the file.
    if (reader.finished) {
      input.destroy();
      return reader.tables();
    }
  }
  write(decode(decoder, undefined, options.label));
  try {
    parser.close();
  } catch (err) {
    throw wrap(options.label, err);
  }
  if (!reader.sawRoot) throw new Error(`${options.label}: not an OVAL definitions document (the input is empty)`);
  return reader.tables();
}

/** Errors raised by the reader (already labelled), as opposed to saxes' syntax errors. */
class OvalFormatError extends Error {}

function wrap(label: string, err: unknown): Error {
  if (err instanceof OvalFormatError) return err;
  // saxes throws plain Errors whose message is "<line>:<column>: <what>".
  if (err instanceof Error && /^\d+:\d+: /.test(err.message)) {
    return new Error(`${label}: malformed XML at ${err.message}`, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}

function decode(decoder: TextDecoder, chunk: Buffer | undefined, label: string): string {
  try {
    return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
  } catch (err) {
    throw new Error(`${label}: the document is not valid UTF-8`, { cause: err });
  }
}

function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

/** A criteria node being built (children still growing). */
interface OpenCriteria {
  operator: string;
  negate: boolean;
  children: OvalNode[];
}

interface DefinitionDraft {
  id: string;
  class: string;
  title: string;
  description: string;
  references: OvalReference[];
  platforms: string[];
  severity: string;
  patchable: string;
  resolutions: { state: string; components: string[] }[];
  affectedCpes: string[];
  criteria: OvalCriteria | null;
}

/** Which text is being captured and where it goes when its element closes. */
type Capture =
  | 'title'
  | 'description'
  | 'platform'
  | 'severity'
  | 'metadata-severity'
  | 'patchable'
  | 'component'
  | 'cpe'
  | 'object-name'
  | 'state-evr'
  | 'state-arch'
  | 'variable-value';

const SECTIONS = new Set(['definitions', 'tests', 'objects', 'states', 'variables']);

class OvalReader {
  sawRoot = false;
  /** Set once the reader has all it wants (the definitions, when no tables are wanted): the rest need not be read. */
  finished = false;
  private readonly label: string;
  private readonly onDefinition: (definition: OvalDefinition) => void;
  private readonly wantTables: boolean;
  /** With a keepTest filter: the tests kept, and the objects, states and variables they reach; undefined keeps all. */
  private readonly keep: { readonly test: (id: string) => boolean; readonly refs: Set<string> } | undefined;
  /** How many variable references the kept objects hold. */
  private variablesWanted = 0;

  /** Local names of the open elements, root first. */
  private readonly path: string[] = [];
  /** The top-level section being read (definitions, tests, …) or '' elsewhere. */
  private section = '';

  private definition: DefinitionDraft | null = null;
  private readonly criteriaStack: OpenCriteria[] = [];

  private capture: Capture | null = null;
  private captureDepth = 0;
  private captured = '';
  private captureAttrs: Record<string, string> = {};

  private readonly testMap = new Map<string, OvalTest>();
  private readonly objectMap = new Map<string, OvalObject>();
  private readonly stateMap = new Map<string, OvalState>();
  private readonly variableMap = new Map<string, readonly string[]>();

  private test: { id: string; type: string; objectRef: string; stateRefs: string[] } | null = null;
  private object: { id: string; type: string; names: string[]; varRefs: string[] } | null = null;
  private state: { id: string; type: string; evr: OvalState['evr']; arch: OvalState['arch'] } | null = null;
  private variable: { id: string; values: string[] } | null = null;

  constructor(options: ReadOvalOptions) {
    this.label = options.label;
    this.onDefinition = options.onDefinition;
    this.wantTables = options.tables !== undefined && options.tables !== false;
    this.keep = typeof options.tables === 'object' ? { test: options.tables.keepTest, refs: new Set() } : undefined;
  }

  tables(): OvalTables {
    return { tests: this.testMap, objects: this.objectMap, states: this.stateMap, variables: this.variableMap };
  }

  open(tag: SaxesTagPlain): void {
    const name = localName(tag.name);
    const attrs = tag.attributes;
    const depth = this.path.length; // depth of this element: 0 = root
    this.path.push(name);
    if (depth === 0) {
      if (name !== 'oval_definitions') {
        throw new OvalFormatError(`${this.label}: not an OVAL definitions document (root element <${tag.name}>)`);
      }
      this.sawRoot = true;
      return;
    }
    if (depth === 1) {
      this.section = SECTIONS.has(name) ? name : '';
      return;
    }
    if (this.capture !== null) return; // markup inside captured text (not expected in OVAL): ignored
    switch (this.section) {
      case 'definitions':
        this.openInDefinitions(name, attrs, depth);
        return;
      case 'tests':
        if (this.wantTables) this.openInTests(name, attrs, depth);
        return;
      case 'objects':
        if (this.wantTables) this.openInObjects(name, attrs, depth);
        return;
      case 'states':
        if (this.wantTables) this.openInStates(name, attrs, depth);
        return;
      case 'variables':
        if (this.wantTables) this.openInVariables(name, attrs, depth);
        return;
      default:
        return;
    }
  }

  text(text: string): void {
    if (this.capture !== null) this.captured += text;
  }

  close(tag: SaxesTagPlain): void {
    const depth = this.path.length - 1;
    const name = this.path.pop() ?? localName(tag.name);
    if (this.capture !== null) {
      if (depth !== this.captureDepth) return;
      this.finishCapture();
    }
    if (depth <= 1) {
      if (depth === 1 && this.section === 'definitions' && !this.wantTables) this.finished = true;
      // With a filter, the states close the tables wanted unless a kept object names variables.
      if (depth === 1 && this.section === 'states' && this.keep && this.variablesWanted === 0) this.finished = true;
      if (depth === 1) this.section = '';
      return;
    }
    switch (this.section) {
      case 'definitions':
        this.closeInDefinitions(name, depth);
        return;
      case 'tests':
        if (depth === 2 && this.test) {
          if (this.kept(this.test.id, 'test')) {
            this.testMap.set(this.test.id, { type: this.test.type, objectRef: this.test.objectRef, stateRefs: this.test.stateRefs });
            this.keep?.refs.add(this.test.objectRef);
            for (const ref of this.test.stateRefs) this.keep?.refs.add(ref);
          }
          this.test = null;
        }
        return;
      case 'objects':
        if (depth === 2 && this.object) {
          if (this.kept(this.object.id)) {
            this.objectMap.set(this.object.id, { type: this.object.type, names: this.object.names, varRefs: this.object.varRefs });
            for (const ref of this.object.varRefs) this.keep?.refs.add(ref);
            this.variablesWanted += this.object.varRefs.length;
          }
          this.object = null;
        }
        return;
      case 'states':
        if (depth === 2 && this.state) {
          if (this.kept(this.state.id))
            this.stateMap.set(this.state.id, { type: this.state.type, evr: this.state.evr, arch: this.state.arch });
          this.state = null;
        }
        return;
      case 'variables':
        if (depth === 2 && this.variable) {
          if (this.kept(this.variable.id)) this.variableMap.set(this.variable.id, this.variable.values);
          this.variable = null;
        }
        return;
      default:
        return;
    }
  }

  /** Whether a table entry is kept: every one without a filter, else the wanted tests and what they refer to. */
  private kept(id: string, table?: 'test'): boolean {
    if (!this.keep) return true;
    return table === 'test' ? this.keep.test(id) : this.keep.refs.has(id);
  }

  private startCapture(capture: Capture, depth: number, attrs: Record<string, string> = {}): void {
    this.capture = capture;
    this.captureDepth = depth;
    this.captured = '';
    this.captureAttrs = attrs;
  }

  private finishCapture(): void {
    const text = this.captured;
    const capture = this.capture;
    this.capture = null;
    this.captured = '';
    const def = this.definition;
    switch (capture) {
      case 'title':
        if (def) def.title = text.trim();
        break;
      case 'description':
        if (def) def.description = text;
        break;
      case 'platform':
        if (def && text.trim() !== '') def.platforms.push(text.trim());
        break;
      case 'severity':
        if (def) def.severity = text.trim();
        break;
      case 'metadata-severity':
        // advisory/severity, wherever it comes in the metadata, wins.
        if (def && def.severity === '') def.severity = text.trim();
        break;
      case 'patchable':
        if (def) def.patchable = text.trim();
        break;
      case 'component': {
        const resolution = def?.resolutions.at(-1);
        if (resolution && text.trim() !== '') resolution.components.push(text.trim());
        break;
      }
      case 'cpe':
        if (def && text.trim() !== '') def.affectedCpes.push(text.trim());
        break;
      case 'object-name':
        if (this.object && text.trim() !== '') this.object.names.push(text.trim());
        break;
      case 'state-evr':
        if (this.state && this.state.evr === null && text.trim() !== '') {
          this.state.evr = {
            value: text.trim(),
            operation: (this.captureAttrs.operation ?? 'equals').trim().toLowerCase(),
            datatype: (this.captureAttrs.datatype ?? 'string').trim(),
          };
        }
        break;
      case 'state-arch':
        if (this.state && this.state.arch === null && text.trim() !== '') {
          this.state.arch = { value: text.trim(), operation: (this.captureAttrs.operation ?? 'equals').trim().toLowerCase() };
        }
        break;
      case 'variable-value':
        if (this.variable && text.trim() !== '') this.variable.values.push(text.trim());
        break;
      default:
        break;
    }
  }

  // definitions/definition/{metadata,criteria}
  private openInDefinitions(name: string, attrs: Record<string, string>, depth: number): void {
    if (depth === 2) {
      if (name !== 'definition') return;
      this.definition = {
        id: attrs.id ?? '',
        class: attrs.class ?? '',
        title: '',
        description: '',
        references: [],
        platforms: [],
        severity: '',
        patchable: '',
        resolutions: [],
        affectedCpes: [],
        criteria: null,
      };
      this.criteriaStack.length = 0;
      return;
    }
    const def = this.definition;
    if (!def) return;
    const parent = this.path[depth - 1];
    const grandparent = this.path[depth - 2];
    if (this.path[3] === 'metadata') {
      if (parent === 'metadata') {
        if (name === 'title') this.startCapture('title', depth);
        else if (name === 'description') this.startCapture('description', depth);
        else if (name === 'severity') this.startCapture('metadata-severity', depth);
        else if (name === 'patchable') this.startCapture('patchable', depth);
        else if (name === 'reference') {
          def.references.push({ source: attrs.source ?? '', refId: attrs.ref_id ?? '', refUrl: attrs.ref_url ?? '' });
        }
      } else if (parent === 'affected' && grandparent === 'metadata' && name === 'platform') {
        this.startCapture('platform', depth);
      } else if (parent === 'advisory' && name === 'severity') {
        this.startCapture('severity', depth);
      } else if (parent === 'affected' && grandparent === 'advisory' && name === 'resolution') {
        def.resolutions.push({ state: (attrs.state ?? '').trim(), components: [] });
      } else if (parent === 'resolution' && name === 'component') {
        this.startCapture('component', depth);
      } else if (parent === 'affected_cpe_list' && name === 'cpe') {
        this.startCapture('cpe', depth);
      }
      return;
    }
    if (name === 'criteria') {
      if (depth !== 3 && this.criteriaStack.length === 0) return; // criteria outside the definition's tree
      this.criteriaStack.push({
        operator: (attrs.operator ?? 'AND').trim().toUpperCase(),
        negate: isTrue(attrs.negate),
        children: [],
      });
      return;
    }
    const open = this.criteriaStack.at(-1);
    if (!open) return;
    if (name === 'criterion') {
      open.children.push({
        kind: 'criterion',
        testRef: attrs.test_ref ?? '',
        comment: attrs.comment ?? '',
        negate: isTrue(attrs.negate),
      });
    } else if (name === 'extend_definition') {
      open.children.push({
        kind: 'extend_definition',
        definitionRef: attrs.definition_ref ?? '',
        comment: attrs.comment ?? '',
        negate: isTrue(attrs.negate),
      });
    }
  }

  private closeInDefinitions(name: string, depth: number): void {
    const def = this.definition;
    if (!def) return;
    if (depth === 2) {
      this.definition = null;
      this.criteriaStack.length = 0;
      try {
        this.onDefinition(def);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        throw new OvalFormatError(`${this.label}: definition ${def.id || '(no id)'}: ${message}`, { cause: err });
      }
      return;
    }
    if (name === 'criteria' && this.criteriaStack.length > 0 && this.path[3] !== 'metadata') {
      const done = this.criteriaStack.pop();
      if (!done) return;
      const node: OvalCriteria = { kind: 'criteria', operator: done.operator, negate: done.negate, children: done.children };
      const parent = this.criteriaStack.at(-1);
      if (parent) parent.children.push(node);
      else def.criteria = node;
    }
  }

  // tests/<x>_test/{object,state}
  private openInTests(name: string, attrs: Record<string, string>, depth: number): void {
    if (depth === 2) {
      this.test = attrs.id ? { id: attrs.id, type: name, objectRef: '', stateRefs: [] } : null;
      return;
    }
    if (depth !== 3 || !this.test) return;
    if (name === 'object' && attrs.object_ref) this.test.objectRef = attrs.object_ref;
    else if (name === 'state' && attrs.state_ref) this.test.stateRefs.push(attrs.state_ref);
  }

  // objects/<x>_object/name
  private openInObjects(name: string, attrs: Record<string, string>, depth: number): void {
    if (depth === 2) {
      this.object = attrs.id ? { id: attrs.id, type: name, names: [], varRefs: [] } : null;
      return;
    }
    if (depth !== 3 || !this.object || name !== 'name') return;
    if (attrs.var_ref) this.object.varRefs.push(attrs.var_ref);
    else this.startCapture('object-name', depth);
  }

  // states/<x>_state/{evr,value}
  private openInStates(name: string, attrs: Record<string, string>, depth: number): void {
    if (depth === 2) {
      this.state = attrs.id ? { id: attrs.id, type: name, evr: null, arch: null } : null;
      return;
    }
    if (depth !== 3 || !this.state) return;
    if (name === 'evr' || (name === 'value' && /evr/.test(attrs.datatype ?? ''))) {
      this.startCapture('state-evr', depth, attrs);
    } else if (name === 'arch') {
      this.startCapture('state-arch', depth, attrs);
    }
  }

  // variables/constant_variable/value
  private openInVariables(name: string, attrs: Record<string, string>, depth: number): void {
    if (depth === 2) {
      this.variable = name === 'constant_variable' && attrs.id ? { id: attrs.id, values: [] } : null;
      return;
    }
    if (depth === 3 && this.variable && name === 'value') this.startCapture('variable-value', depth);
  }
}

function isTrue(value: string | undefined): boolean {
  const v = value?.trim().toLowerCase();
  return v === 'true' || v === '1';
}
