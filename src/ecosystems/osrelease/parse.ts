import type { LayerFiles } from '../../model/indexing.js';

/** The key/value pairs of an os-release (or lsb-release) file. */
export type ReleaseFields = Readonly<Record<string, string>>;

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Characters a backslash escapes inside double quotes, as in the shell. */
const DOUBLE_QUOTE_ESCAPES = '"\\$`';

/**
 * Parses os-release(5): `KEY=value` lines, blank lines and `#` comment lines ignored, values in
 * shell quoting (single quotes literal; double quotes with \" \\ \$ \` escapes; a bare backslash
 * escapes the next character). Leading and trailing blanks around a line are ignored, a later
 * assignment overrides an earlier one, and lines that are not assignments are skipped.
 */
export function parseOsRelease(text: string): Record<string, string> {
  const fields = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq).trim();
    if (!KEY.test(key)) continue;
    fields.set(key, unquote(line.slice(eq + 1).trim()));
  }
  // fromEntries defines own properties, so a key such as __proto__ cannot reach the prototype.
  return Object.fromEntries(fields);
}

/** Removes shell quoting from one value; an unterminated quote runs to the end of the line. */
function unquote(value: string): string {
  let out = '';
  let quote = '';
  for (let i = 0; i < value.length; i++) {
    const c = value.charAt(i);
    const next = value.charAt(i + 1);
    if (quote === "'") {
      if (c === "'") quote = '';
      else out += c;
    } else if (c === '\\' && next !== '' && (quote === '' || DOUBLE_QUOTE_ESCAPES.includes(next))) {
      out += next;
      i++;
    } else if (quote === '"') {
      if (c === '"') quote = '';
      else out += c;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else {
      out += c;
    }
  }
  return out;
}

/**
 * A wanted file's text, or undefined when the layer does not hold it. Release files are ASCII in
 * practice; a lossy UTF-8 decode never throws on the odd byte.
 */
export function fileText(files: LayerFiles, path: string): string | undefined {
  return files.get(path)?.toString('utf8');
}
