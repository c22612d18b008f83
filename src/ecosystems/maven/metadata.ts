/**
 * The two metadata files a Java archive carries about itself: Maven's `pom.properties` (Java
 * properties) and the JAR manifest, read as the JDK reads them.
 */

/**
 * A properties file as `java.util.Properties.load(InputStream)` reads it: ISO-8859-1 bytes; lines
 * ended by LF, CR or CR LF; a line whose first non-blank character is `#` or `!` is a comment; a
 * line ending in an odd number of backslashes continues on the next, whose leading blanks are
 * dropped; the key ends at the first unescaped `=`, `:` or blank, after which blanks, one `=` or
 * `:` and blanks again are skipped; `\t`, `\n`, `\r`, `\f` and `\uXXXX` are escapes and a backslash
 * before any other character stands for that character. A later key replaces an earlier one.
 * Throws on a malformed `\u` escape, as the JDK does.
 */
export function parseProperties(content: Buffer): Map<string, string> {
  const properties = new Map<string, string>();
  for (const line of logicalLines(content.toString('latin1'))) {
    let keyEnd = 0;
    while (keyEnd < line.length && !KEY_TERMINATORS.has(line[keyEnd] as string)) keyEnd += line[keyEnd] === '\\' ? 2 : 1;
    keyEnd = Math.min(keyEnd, line.length);
    let valueStart = keyEnd;
    while (valueStart < line.length && BLANKS.has(line[valueStart] as string)) valueStart += 1;
    if (line[valueStart] === '=' || line[valueStart] === ':') valueStart += 1;
    while (valueStart < line.length && BLANKS.has(line[valueStart] as string)) valueStart += 1;
    properties.set(unescape(line.slice(0, keyEnd)), unescape(line.slice(valueStart)));
  }
  return properties;
}

const BLANKS = new Set([' ', '\t', '\f']);
const KEY_TERMINATORS = new Set(['=', ':', ' ', '\t', '\f']);

/** The logical lines of a properties file, comments and blank lines left out, escapes still in. */
function* logicalLines(text: string): Generator<string> {
  const natural = text.split(/\r\n|\r|\n/);
  let pending: string | undefined;
  for (const raw of natural) {
    let line = raw;
    let start = 0;
    while (start < line.length && BLANKS.has(line[start] as string)) start += 1;
    line = line.slice(start);
    if (pending === undefined && (line === '' || line[0] === '#' || line[0] === '!')) continue;
    let backslashes = 0;
    while (backslashes < line.length && line[line.length - 1 - backslashes] === '\\') backslashes += 1;
    const joined = (pending ?? '') + (backslashes % 2 === 1 ? line.slice(0, -1) : line);
    if (backslashes % 2 === 1) {
      pending = joined;
    } else {
      pending = undefined;
      yield joined;
    }
  }
  // The JDK keeps a continued last line as it stands.
  if (pending !== undefined) yield pending;
}

const ESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r', f: '\f' };

function unescape(text: string): string {
  if (!text.includes('\\')) return text;
  let out = '';
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (c !== '\\' || i + 1 === text.length) {
      // A lone trailing backslash is dropped by the JDK's loadConvert.
      if (c !== '\\') out += c;
      continue;
    }
    i += 1;
    const next = text[i] as string;
    if (next === 'u') {
      const hex = text.slice(i + 1, i + 5);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new Error(`malformed \\uxxxx escape: \\u${hex}`);
      out += String.fromCharCode(parseInt(hex, 16));
      i += 4;
    } else {
      out += ESCAPES[next] ?? next;
    }
  }
  return out;
}

/**
 * The main section of a JAR manifest (`java.util.jar.Manifest`): UTF-8 lines ended by LF, CR or
 * CR LF; a line starting with one space continues the one before it (the space dropped); the main
 * section ends at the first blank line; a header is `Name: value`. Names are case-insensitive
 * (kept lower-cased here); the first of a repeated header is kept, as the JDK keeps it (it warns
 * and ignores the later one). Lines that are not headers are skipped rather than refused: the JDK
 * refuses the manifest, but a jar with a sloppy manifest still runs when nothing reads it, and its
 * other headers still say what it is.
 */
export function parseManifest(content: Buffer): Map<string, string> {
  const headers = new Map<string, string>();
  const lines: string[] = [];
  for (const line of content
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/)) {
    if (line === '') break;
    if (line.startsWith(' ') && lines.length > 0) lines[lines.length - 1] += line.slice(1);
    else lines.push(line);
  }
  for (const line of lines) {
    const colon = line.indexOf(': ');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 2).trim());
  }
  return headers;
}
