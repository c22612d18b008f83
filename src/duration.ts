// Go-style durations ("900s", "1h30m", "1.5h") and byte sizes ("10GiB", "200MiB", "1024").
// Pure helpers: no I/O, no configuration knowledge. src/config.ts turns their errors into
// ConfigErrors that name the offending key.

const NS_PER_UNIT: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const DURATION_RE = /^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const DURATION_PART_RE = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/g;
const NS_PER_MS = 1_000_000n;

/**
 * Parses a Go `time.ParseDuration` string and returns milliseconds.
 * Accepted: a sequence of decimal numbers with units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`,
 * optionally signed (`"-1.5h"`), or the bare `"0"`. A remainder below one millisecond is rounded
 * away from zero, so a non-zero duration never becomes 0 ms. Throws on anything else.
 */
export function parseDuration(s: string): number {
  if (typeof s !== 'string') throw new TypeError(`invalid duration ${describe(s)}`);
  const text = s.trim();
  if (/^[-+]?0$/.test(text)) return 0;
  if (!DURATION_RE.test(text)) {
    throw new RangeError(
      `invalid duration ${JSON.stringify(s)}: expected a number and a unit (ns, us, ms, s, m, h), e.g. "900s", "2h", "1h30m"`,
    );
  }
  const negative = text.startsWith('-');
  let ns = 0n;
  for (const m of text.matchAll(DURATION_PART_RE)) {
    const whole = m[1] ?? '';
    const frac = m[2] ?? '';
    const unit = NS_PER_UNIT[m[3] ?? ''];
    if (unit === undefined) throw new RangeError(`invalid duration ${JSON.stringify(s)}`);
    ns += BigInt(whole === '' ? '0' : whole) * unit;
    if (frac !== '') ns += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
  }
  let ms = ns / NS_PER_MS;
  if (ns % NS_PER_MS !== 0n) ms += 1n;
  if (ms > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`invalid duration ${JSON.stringify(s)}: too large`);
  const value = Number(ms);
  return negative && value !== 0 ? -value : value;
}

const BYTES_PER_UNIT: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  kib: 1024,
  ki: 1024,
  mib: 1024 ** 2,
  mi: 1024 ** 2,
  gib: 1024 ** 3,
  gi: 1024 ** 3,
  tib: 1024 ** 4,
  ti: 1024 ** 4,
  kb: 1000,
  k: 1000,
  mb: 1000 ** 2,
  m: 1000 ** 2,
  gb: 1000 ** 3,
  g: 1000 ** 3,
  tb: 1000 ** 4,
  t: 1000 ** 4,
};

const SIZE_RE = /^(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)$/i;

/**
 * Parses a byte size and returns bytes (an integer).
 * Accepted: a non-negative integer number, or a string: a non-negative decimal number followed by
 * an optional unit (case-insensitive): `B`; binary `KiB`, `MiB`, `GiB`, `TiB` (also `Ki`…`Ti`);
 * decimal `kB`, `MB`, `GB`, `TB` (also `k`…`T`), e.g. `"10GiB"`, `"200MiB"`, `"512KiB"`, `"1024"`,
 * `"1.5GiB"`. Fractions of a byte are truncated. Throws on anything else.
 */
export function parseByteSize(s: string | number): number {
  if (typeof s === 'number') {
    if (!Number.isSafeInteger(s) || s < 0) throw new RangeError(`invalid byte size ${String(s)}: expected a non-negative integer`);
    return s;
  }
  if (typeof s !== 'string') throw new TypeError(`invalid byte size ${describe(s)}`);
  const m = SIZE_RE.exec(s.trim());
  const unit = m ? BYTES_PER_UNIT[(m[2] ?? '').toLowerCase()] : undefined;
  if (!m || unit === undefined) {
    throw new RangeError(
      `invalid byte size ${JSON.stringify(s)}: expected a number and an optional unit (B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), e.g. "200MiB"`,
    );
  }
  const bytes = Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes)) throw new RangeError(`invalid byte size ${JSON.stringify(s)}: too large`);
  return bytes;
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'list' : typeof v;
}
