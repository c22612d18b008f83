import { manifestEntry, manifestLister, type ManifestReading } from '../application-manifests.js';
import { semver } from './version.js';

/**
 * Lists the Rust crates a `Cargo.lock` pins (an application's sources copied into an image, a
 * build stage's workspace): each `[[package]]` table's `name` and `version`, for the packages
 * whose `source` is the crates.io registry, the ones crates.io advisories name. Cargo records
 * crates.io as `registry+https://github.com/rust-lang/crates.io-index` whatever protocol fetched
 * it; `sparse+https://index.crates.io/` is accepted too, as the same registry reached by its
 * sparse index. Skipped: packages without a `source` (the workspace's own crates and its path
 * dependencies, code of the image's own), `git+` sources (a repository at a commit, whose version
 * field names no published crate) and other registries (crates of the same name there are other
 * code). The `[root]` table of the oldest lock files (before Cargo 0.13) is the workspace's own
 * crate too, and `[[patch.unused]]` lists patches the build did not use: neither is read.
 *
 * Cargo.lock is TOML, written by Cargo's own serializer, so it uses a small part of TOML: table and
 * array-of-tables headers, `key = value` with bare or quoted keys (the `[metadata]` checksums of
 * lock format 1 have quoted keys), basic and literal strings, integers, booleans and arrays of
 * those across lines. That part is read here, exactly; anything else (inline tables, multi-line
 * strings, dotted keys, dates) makes the file unreadable with the line it is on, rather than read
 * some other way.
 */

const CRATES_IO_SOURCES = new Set(['registry+https://github.com/rust-lang/crates.io-index', 'sparse+https://index.crates.io/']);
const LOCK_FILE = 'Cargo.lock';

type TomlValue = string | number | boolean | TomlValue[];

interface TomlTable {
  /** The header's key as written between the brackets, unquoted (`package`, `patch.unused`). */
  readonly header: string;
  /** `[[header]]`: one element of an array of tables. */
  readonly arrayElement: boolean;
  readonly entries: Map<string, TomlValue>;
}

class TomlSubsetError extends Error {}

/** TOML's escapes in basic strings (`\uXXXX` and `\UXXXXXXXX` are read apart). */
const ESCAPES: Readonly<Record<string, string>> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };
const BARE_KEY = /[A-Za-z0-9_-]/;
const INTEGER = /^[+-]?(?:0|[1-9](?:_?[0-9])*)/;

/** A cursor over the text, reporting errors with the line they are on. */
class Reader {
  private at = 0;
  constructor(private readonly text: string) {}

  get done(): boolean {
    return this.at >= this.text.length;
  }

  /** Where the cursor is, for an error found after reading past it. */
  get position(): number {
    return this.at;
  }

  fail(what: string, at = this.at): never {
    const line = this.text.slice(0, at).split('\n').length;
    throw new TomlSubsetError(`line ${line}: ${what}`);
  }

  private peek(): string {
    return this.text[this.at] ?? '';
  }

  /** Spaces and tabs, and with newlines also line breaks and comments (inside an array). */
  skipBlank(newlines: boolean): void {
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t') this.at++;
      else if (newlines && (c === '\n' || c === '\r')) this.at++;
      else if (newlines && c === '#') this.skipComment();
      else return;
    }
  }

  private skipComment(): void {
    const end = this.text.indexOf('\n', this.at);
    this.at = end < 0 ? this.text.length : end;
  }

  /** The end of a line: optional blanks and comment, then a line break or the end of the text. */
  endLine(): void {
    this.skipBlank(false);
    if (this.peek() === '#') this.skipComment();
    if (this.peek() === '\r') this.at++;
    if (this.done) return;
    if (this.peek() !== '\n') this.fail(`unexpected ${JSON.stringify(this.peek())}`);
    this.at++;
  }

  /** Whether the next line is blank or a comment (consumed), or the text ends. */
  skipEmptyLine(): boolean {
    const start = this.at;
    this.skipBlank(false);
    const c = this.peek();
    if (this.done || c === '\n' || c === '\r' || c === '#') {
      this.endLine();
      return true;
    }
    this.at = start;
    return false;
  }

  /** `[key]` or `[[key]]`, or undefined when the line is no header. */
  header(): { header: string; arrayElement: boolean } | undefined {
    this.skipBlank(false);
    if (this.peek() !== '[') return undefined;
    this.at++;
    const arrayElement = this.peek() === '[';
    if (arrayElement) this.at++;
    const parts: string[] = [];
    for (;;) {
      this.skipBlank(false);
      parts.push(this.key());
      this.skipBlank(false);
      if (this.peek() !== '.') break;
      this.at++;
    }
    for (const close of arrayElement ? ']]' : ']') {
      if (this.peek() !== close) this.fail(`${arrayElement ? ']]' : ']'} expected`);
      this.at++;
    }
    this.endLine();
    return { header: parts.join('.'), arrayElement };
  }

  /** `key = value` on one line (an array may span several). */
  keyValue(): [string, TomlValue] {
    this.skipBlank(false);
    const key = this.key();
    this.skipBlank(false);
    if (this.peek() === '.') this.fail('dotted keys are not part of a Cargo.lock');
    if (this.peek() !== '=') this.fail('= expected');
    this.at++;
    this.skipBlank(false);
    const value = this.value();
    this.endLine();
    return [key, value];
  }

  private key(): string {
    const c = this.peek();
    if (c === '"') return this.basicString();
    if (c === "'") return this.literalString();
    const start = this.at;
    while (BARE_KEY.test(this.peek())) this.at++;
    if (this.at === start) this.fail('a key expected');
    return this.text.slice(start, this.at);
  }

  private value(): TomlValue {
    const c = this.peek();
    if (c === '"') return this.basicString();
    if (c === "'") return this.literalString();
    if (c === '[') return this.array();
    for (const literal of [true, false]) {
      if (this.text.startsWith(String(literal), this.at)) {
        this.at += String(literal).length;
        return literal;
      }
    }
    const integer = INTEGER.exec(this.text.slice(this.at, this.at + 32));
    if (integer !== null) {
      this.at += integer[0].length;
      return Number(integer[0].replaceAll('_', ''));
    }
    return this.fail(`a value of a kind a Cargo.lock does not hold (${JSON.stringify(this.text.slice(this.at, this.at + 12))})`);
  }

  private array(): TomlValue[] {
    this.at++;
    const items: TomlValue[] = [];
    for (;;) {
      this.skipBlank(true);
      if (this.peek() === ']') break;
      items.push(this.value());
      this.skipBlank(true);
      if (this.peek() === ',') this.at++;
      else if (this.peek() !== ']') this.fail(', or ] expected');
    }
    this.at++;
    return items;
  }

  private basicString(): string {
    if (this.text.startsWith('"""', this.at)) this.fail('multi-line strings are not part of a Cargo.lock');
    this.at++;
    let out = '';
    for (;;) {
      const c = this.peek();
      if (c === '' || c === '\n') this.fail('unterminated string');
      this.at++;
      if (c === '"') return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.peek();
      this.at++;
      const escaped = ESCAPES[e];
      if (escaped !== undefined) {
        out += escaped;
      } else if (e === 'u' || e === 'U') {
        const hex = this.text.slice(this.at, this.at + (e === 'u' ? 4 : 8));
        const point = /^[0-9A-Fa-f]+$/.test(hex) && hex.length === (e === 'u' ? 4 : 8) ? parseInt(hex, 16) : NaN;
        if (!(point <= 0x10ffff) || (point >= 0xd800 && point <= 0xdfff)) this.fail(`invalid escape \\${e}${hex}`);
        out += String.fromCodePoint(point);
        this.at += hex.length;
      } else {
        this.fail(`invalid escape \\${e}`);
      }
    }
  }

  private literalString(): string {
    if (this.text.startsWith("'''", this.at)) this.fail('multi-line strings are not part of a Cargo.lock');
    const end = this.text.indexOf("'", this.at + 1);
    const newline = this.text.indexOf('\n', this.at + 1);
    if (end < 0 || (newline >= 0 && newline < end)) this.fail('unterminated string');
    const s = this.text.slice(this.at + 1, end);
    this.at = end + 1;
    return s;
  }
}

/**
 * The tables of a Cargo.lock, in order (the keys before any header as a table with header ''),
 * or a TomlSubsetError saying where the text leaves the part of TOML Cargo writes.
 */
function readTables(text: string): TomlTable[] {
  const reader = new Reader(text.replace(/^\uFEFF/, ''));
  let table: TomlTable = { header: '', arrayElement: false, entries: new Map() };
  const tables = [table];
  while (!reader.done) {
    if (reader.skipEmptyLine()) continue;
    const header = reader.header();
    if (header !== undefined) {
      table = { ...header, entries: new Map() };
      tables.push(table);
      continue;
    }
    const start = reader.position;
    const [key, value] = reader.keyValue();
    if (table.entries.has(key)) reader.fail(`${key} defined twice`, start);
    table.entries.set(key, value);
  }
  return tables;
}

function readLock(content: Buffer): ManifestReading {
  let tables: TomlTable[];
  try {
    tables = readTables(content.toString('utf8'));
  } catch (e) {
    if (e instanceof TomlSubsetError) return { why: `not a Cargo.lock: ${e.message}` };
    throw e;
  }
  const packages = tables.filter((table) => table.header === 'package' && table.arrayElement);
  const entries = packages.map((table, index) => {
    const { name, version, source } = Object.fromEntries(table.entries);
    const entry = manifestEntry(name, version, `package[${index}]`);
    return 'why' in entry || (typeof source === 'string' && CRATES_IO_SOURCES.has(source)) ? entry : undefined;
  });
  return { entries: entries.filter((entry) => entry !== undefined) };
}

export const cargoLockLister = manifestLister({
  name: 'cargo-lock',
  version: 1,
  ecosystem: 'crates.io',
  format: semver,
  wants: (path) => path === LOCK_FILE || path.endsWith(`/${LOCK_FILE}`),
  read: readLock,
});
