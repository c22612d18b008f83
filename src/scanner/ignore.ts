import { readFile } from 'node:fs/promises';
import { ScanError } from './backend.js';

/**
 * The ignore file (--ignore FILE): a YAML list of entries `{id, package?, expires?, reason?}`. An
 * entry leaves the finding with that vulnerability id (in that package only, when package is
 * given) out of the gate and the outputs, until the end of its expires date; after it, the entry
 * no longer applies and the finding counts again.
 */
export interface IgnoreEntry {
  id: string;
  package?: string;
  /** The last day (UTC) the entry applies, as written (YYYY-MM-DD, or a full ISO date-time). */
  expires?: string;
  /** When it stops applying: the end of that day, or that instant. */
  until?: Date;
  reason?: string;
}

const FIELDS = new Set(['id', 'package', 'expires', 'reason']);
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Reads and checks the whole file; any mistake is an error naming the entry (a typo must not silently ignore nothing). */
export async function readIgnoreFile(file: string): Promise<IgnoreEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ScanError(`--ignore ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  return parseIgnoreFile(text, file);
}

/** The entries of the file's text; the YAML reader is loaded here, so that a scan without --ignore does not load it. */
export async function parseIgnoreFile(text: string, file: string): Promise<IgnoreEntry[]> {
  const { parse } = await import('yaml');
  let document: unknown;
  try {
    document = parse(text);
  } catch (err) {
    throw new ScanError(`--ignore ${file} is not YAML: ${(err as Error).message}`);
  }
  if (document === null || document === undefined) return [];
  if (!Array.isArray(document)) throw new ScanError(`--ignore ${file} must be a YAML list of entries {id, package?, expires?, reason?}`);
  return document.map((raw: unknown, i) => {
    const where = `--ignore ${file}, entry ${i + 1}`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ScanError(`${where} is not a mapping`);
    const entry = raw as Record<string, unknown>;
    const unknown = Object.keys(entry).filter((k) => !FIELDS.has(k));
    if (unknown.length > 0)
      throw new ScanError(`${where} has unknown fields (${unknown.join(', ')}); the fields are id, package, expires, reason`);
    const text = (key: string): string | undefined => {
      const value = entry[key];
      if (value === undefined || value === null) return undefined;
      // YAML reads an unquoted 2025-01-31 as a date.
      if (value instanceof Date && key === 'expires') return value.toISOString().slice(0, 10);
      if (typeof value !== 'string' || value.trim() === '') throw new ScanError(`${where}: ${key} must be a non-empty string`);
      return value.trim();
    };
    const id = text('id');
    if (id === undefined) throw new ScanError(`${where} has no id`);
    const expires = text('expires');
    let until: Date | undefined;
    if (expires !== undefined) {
      const time = DATE.test(expires) ? Date.parse(`${expires}T00:00:00Z`) + DAY_MS : Date.parse(expires);
      if (!Number.isFinite(time) || !/^\d{4}-\d{2}-\d{2}/.test(expires)) {
        throw new ScanError(`${where}: expires must be an ISO date (YYYY-MM-DD), not ${JSON.stringify(expires)}`);
      }
      until = new Date(time);
    }
    const pkg = text('package');
    const reason = text('reason');
    return {
      id,
      ...(pkg !== undefined ? { package: pkg } : {}),
      ...(expires !== undefined ? { expires, until } : {}),
      ...(reason !== undefined ? { reason } : {}),
    };
  });
}

/** The entry that applies to a finding at this time, if any. */
export function ignoreEntryFor(
  entries: readonly IgnoreEntry[],
  finding: { id: string; packageName: string },
  now: Date,
): IgnoreEntry | undefined {
  return entries.find(
    (e) =>
      e.id.toLowerCase() === finding.id.toLowerCase() &&
      (e.package === undefined || e.package === finding.packageName) &&
      (e.until === undefined || now < e.until),
  );
}
