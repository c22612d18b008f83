// The one typed, validated, frozen configuration object.
//
// Input: a YAML file (an unchanged Clair v2 or v3 config.yaml, or a Tarsier one — everything under
// `clair:`) plus environment overrides passed in by the caller. Nothing here reads process.env.
//
// How it works:
//   1. SCHEMA below is the single table of every accepted key: its value parser, its default, and
//      whether Tarsier uses it or accepts-and-ignores it for Clair compatibility. Keys are matched
//      case-insensitively; an unknown key is an error naming its full dotted path.
//   2. walk() checks the YAML against SCHEMA and produces one parsed value per key (default filled in).
//   3. build() combines keys that interact (v2 port vs v3 addr, the two paginationkey places,
//      endpoint lists, env overrides) into the Config, which is then deep-frozen.
// docs/configuration.md documents every key of SCHEMA; test/config.test.ts keeps them in step.

import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import type { PoolConfig } from 'pg';
import { LineCounter, isMap, isScalar, parseDocument, type Document } from 'yaml';
import { parseByteSize, parseDuration } from './duration.js';
import { APPLICATION_ECOSYSTEMS, SOURCE_CATALOG, sourceNamed } from './ecosystems/catalog.js';
import { parseNetwork } from './outbound/address-policy.js';
import { canonicalRegistry } from './registry/reference.js';

export { parseByteSize, parseDuration } from './duration.js';

export interface Config {
  readonly api: {
    readonly host: string;
    readonly port: number;
    readonly healthHost: string;
    readonly healthPort: number;
    readonly timeoutMs: number;
    readonly bodyTimeoutMs: number;
    readonly headerTimeoutMs: number;
    /** An HTTP/1.1 keep-alive connection between requests, or an HTTP/2 connection without a call, is closed after this. */
    readonly idleTimeoutMs: number;
    /** A layer upload that sends no byte for this long is answered 408. */
    readonly uploadIdleTimeoutMs: number;
    /** gRPC on a port of its own as well (clair.api.grpcport); null: only on the API port. */
    readonly grpcPort: number | null;
    readonly paginationKey: Buffer | null;
    readonly v1Revision: 'A' | 'B';
    readonly localRoots: readonly string[];
    readonly auth: {
      readonly tokens: readonly string[];
      readonly psk: Buffer | null;
      readonly requireExp: boolean;
      /** A dashboard session unused this long ends. */
      readonly sessionIdleMs: number;
      /** A dashboard session ends this long after its sign-in, used or not. */
      readonly sessionLifetimeMs: number;
    };
    readonly tls: { readonly certFile: string; readonly keyFile: string; readonly caFile: string };
  };
  readonly database: {
    readonly connection: PoolConfig | null;
    readonly maxConnections: number;
    readonly dataDir: string;
    /** dataDir is the default (./data/postgres), chosen by neither TARSIER_DATA_DIR nor database.datadir. */
    readonly dataDirIsDefault: boolean;
  };
  readonly indexer: {
    readonly downloadTimeoutMs: number;
    readonly maxLayerBytes: number;
    readonly maxExpandedBytes: number;
    readonly maxFileBytes: number;
    readonly denyPrivate: boolean;
    readonly allowNetworks: readonly string[];
  };
  readonly updater: {
    readonly intervalMs: number;
    /** Vulnerability data older than this is reported stale (images API, dashboard); 0: never. */
    readonly maxDataAgeMs: number;
    readonly enabledUpdaters: readonly string[];
    /** Each source's location and, for one that takes them, the OSV names of the ecosystems it reads (all when absent). */
    readonly sources: Readonly<Record<string, { readonly url: string; readonly ecosystems?: readonly string[] }>>;
  };
  readonly notifier: {
    readonly attempts: number;
    readonly renotifyIntervalMs: number;
    readonly endpoints: readonly string[];
    readonly http: {
      readonly serverName: string;
      readonly caFile: string;
      readonly certFile: string;
      readonly keyFile: string;
      readonly proxy: string;
    };
    readonly secret: string;
    readonly retentionMs: number;
    /** A change of a CVE's KEV entry notifies the vulnerabilities standing for it (off by default). */
    readonly onEnrichment: boolean;
  };
  /** Credentials and transport per registry host, as references write the host (`localhost:5000`, `docker.io`). */
  readonly registries: Readonly<Record<string, RegistryHostConfig>>;
  readonly webhooks: {
    /** The whole Authorization header value registry webhooks must send; empty: the webhook routes are off (404). */
    readonly secret: string;
  };
  readonly images: {
    /** An image no tag points to any more is deleted this long after it was last seen; 0 keeps it. */
    readonly untaggedRetentionMs: number;
    /** Image scans (webhooks, ?wait=false) run at once by this process. */
    readonly workers: number;
    /** Attempts of a queued scan before it is given up. */
    readonly attempts: number;
  };
  readonly log: { readonly level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
}

export interface RegistryHostConfig {
  readonly username: string;
  readonly password: string;
  readonly token: string;
  readonly insecure: boolean;
}

type LogLevel = Config['log']['level'];

/** An invalid configuration. The message starts with the offending key (`clair.api.port: …`) or
 * environment variable (`TARSIER_API_PORT: …`); `key` holds that name. */
export class ConfigError extends Error {
  readonly key: string | undefined;
  constructor(message: string, options?: { key?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConfigError';
    this.key = options?.key;
  }
}

// ---------------------------------------------------------------------------------------------
// Fixed vocabularies

/** Tarsier's updaters, in default order (the catalog's; their default locations are there too). */
const UPDATER_NAMES: readonly string[] = SOURCE_CATALOG.map((s) => s.name);
type UpdaterName = string;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** Clair's (logrus) level names that pino spells differently. */
const LOG_LEVEL_ALIASES: Readonly<Record<string, LogLevel>> = { warning: 'warn', panic: 'fatal' };

/** Environment variables that override the file (an empty value counts as unset). */
const ENV = {
  config: 'TARSIER_CONFIG',
  databaseUrl: 'DATABASE_URL',
  apiAddr: 'TARSIER_API_ADDR',
  apiPort: 'TARSIER_API_PORT',
  healthAddr: 'TARSIER_HEALTH_ADDR',
  healthPort: 'TARSIER_HEALTH_PORT',
  logLevel: 'TARSIER_LOG_LEVEL',
  dataDir: 'TARSIER_DATA_DIR',
} as const;

/** Where the API and health servers listen when no address is configured: loopback unless the API requires a credential. */
const LOOPBACK_HOST = '127.0.0.1';
/** Go's net.Listen reads ":port" as every interface. */
const ALL_INTERFACES = '0.0.0.0';
const DEFAULT_API_PORT = 6060;
const DEFAULT_HEALTH_PORT = 6061;
const DEFAULT_MAX_CONNECTIONS = 10;
const PAGINATION_KEY_BYTES = 32;
const MIN_PSK_BYTES = 32; // RFC 7518 §3.2: an HS256 key must be at least 256 bits

// ---------------------------------------------------------------------------------------------
// Value parsers. Each returns the parsed value or throws Problem("must be …"); the caller adds
// the key name (and the file line) to make the ConfigError.

class Problem extends Error {
  /** Set when the problem is in one element of a list value. */
  readonly index: number | undefined;
  constructor(message: string, index?: number) {
    super(message);
    this.index = index;
  }
}

interface Ctx {
  /** Directory that relative paths in the file are resolved against. */
  readonly baseDir: string;
  /** The value's YAML source text when YAML typed it as a number/bool (e.g. an all-digit key). */
  readonly sourceText: string | undefined;
}

interface Parser<T> {
  /** What a valid value looks like, for messages ("an integer between 0 and 65535"). */
  readonly expected: string;
  parse(v: unknown, ctx: Ctx): T;
}

function got(v: unknown, secret = false): string {
  if (Array.isArray(v)) return 'a list';
  if (v !== null && typeof v === 'object') return 'a mapping';
  if (secret) return typeof v === 'string' ? `a value of ${v.length} characters` : `a ${typeof v}`;
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

function must(expected: string, v: unknown, secret = false): Problem {
  return new Problem(`must be ${expected} (got ${got(v, secret)})`);
}

function scalarText(v: unknown, ctx: Ctx, expected: string, secret = false): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return ctx.sourceText ?? String(v);
  throw must(expected, v, secret);
}

const text = (secret = false): Parser<string> => ({
  expected: 'a string',
  parse: (v, ctx) => scalarText(v, ctx, 'a string', secret),
});

const integer = (min: number, max?: number): Parser<number> => {
  const expected = max === undefined ? `an integer >= ${min}` : `an integer between ${min} and ${max}`;
  return {
    expected,
    parse(v) {
      const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*[-+]?\d+\s*$/.test(v) ? Number(v) : NaN;
      if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) throw must(expected, v);
      return n;
    },
  };
};

const port = integer(0, 65535);

const boolean: Parser<boolean> = {
  expected: 'true or false',
  parse(v) {
    if (typeof v === 'boolean') return v;
    if (typeof v === 'string') {
      const s = v.trim().toLowerCase();
      if (['true', 'yes', 'on'].includes(s)) return true; // yaml.v2 (YAML 1.1) spellings
      if (['false', 'no', 'off'].includes(s)) return false;
    }
    throw must('true or false', v);
  },
};

const DURATION_EXPECTED = 'a duration >= 0 such as "900s", "2h" or "1h30m"';
const duration: Parser<number> = {
  expected: DURATION_EXPECTED,
  parse(v, ctx) {
    if (v === 0) return 0; // yaml.v2 reads a bare 0 as a zero duration ("interval: 0" disables)
    let ms: number;
    try {
      ms = parseDuration(scalarText(v, ctx, DURATION_EXPECTED));
    } catch {
      throw must(DURATION_EXPECTED, v);
    }
    if (ms < 0) throw must(DURATION_EXPECTED, v);
    return ms;
  },
};

const POSITIVE_DURATION_EXPECTED = 'a duration > 0 such as "30s" or "2m"';
const positiveDuration: Parser<number> = {
  expected: POSITIVE_DURATION_EXPECTED,
  parse(v, ctx) {
    const ms = duration.parse(v, ctx);
    if (ms <= 0) throw must(POSITIVE_DURATION_EXPECTED, v);
    return ms;
  },
};

const SIZE_EXPECTED = 'a size > 0 such as "200MiB", "10GiB" or a number of bytes';
const byteSize: Parser<number> = {
  expected: SIZE_EXPECTED,
  parse(v) {
    if (typeof v !== 'number' && typeof v !== 'string') throw must(SIZE_EXPECTED, v);
    let n: number;
    try {
      n = parseByteSize(v);
    } catch {
      throw must(SIZE_EXPECTED, v);
    }
    if (n <= 0) throw must(SIZE_EXPECTED, v);
    return n;
  },
};

const list = <T>(item: Parser<T>): Parser<T[]> => {
  const expected = `a list of ${item.expected.replace(/^an? /, '')}s`;
  return {
    expected,
    parse(v, ctx) {
      if (!Array.isArray(v)) throw must(expected, v);
      return v.map((x: unknown, i) => {
        try {
          if (x === null || x === '') throw must(item.expected, x);
          return item.parse(x, { baseDir: ctx.baseDir, sourceText: undefined });
        } catch (e) {
          if (e instanceof Problem) throw new Problem(e.message, i);
          throw e;
        }
      });
    },
  };
};

const anything: Parser<unknown> = { expected: 'any value', parse: (v) => v };

const oneOf = <T extends string>(
  values: readonly T[],
  aliases: Readonly<Record<string, T>> = {},
  normalize = (s: string) => s.toLowerCase(),
): Parser<T> => {
  const expected = `one of ${values.join(', ')}`;
  return {
    expected,
    parse(v, ctx) {
      const s = normalize(scalarText(v, ctx, expected).trim());
      const hit = values.find((x) => x === s) ?? aliases[s];
      if (hit === undefined) throw must(expected, v);
      return hit;
    },
  };
};

const URL_EXPECTED = 'an http:// or https:// URL';
const SOURCE_URL_EXPECTED = 'an http://, https:// or file:// URL';
/** Updater sources may also be local files (mirrors, tests, air-gapped copies laid out as upstream). */
const sourceUrl: Parser<string> = {
  expected: SOURCE_URL_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, SOURCE_URL_EXPECTED).trim();
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      throw must(SOURCE_URL_EXPECTED, v);
    }
    if (u.protocol === 'file:' && u.pathname !== '') return s;
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') throw must(SOURCE_URL_EXPECTED, v);
    return s;
  },
};

const ECOSYSTEM_EXPECTED = `an application ecosystem (${APPLICATION_ECOSYSTEMS.map((e) => e.osvName).join(', ')})`;
/** An application ecosystem by OSV's name or its namespace, in any case (`PyPI`, `pypi`); OSV's name. */
const ecosystemName: Parser<string> = {
  expected: ECOSYSTEM_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, ECOSYSTEM_EXPECTED).trim().toLowerCase();
    const found = APPLICATION_ECOSYSTEMS.find((e) => e.osvName.toLowerCase() === s || e.namespace === s);
    if (!found) throw must(ECOSYSTEM_EXPECTED, v);
    return found.osvName;
  },
};

const httpUrl: Parser<string> = {
  expected: URL_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, URL_EXPECTED).trim();
    let u: URL;
    try {
      u = new URL(s);
    } catch {
      throw must(URL_EXPECTED, v);
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') throw must(URL_EXPECTED, v);
    return s;
  },
};

/** A file system path, resolved against the config file's directory (or the cwd without a file). */
const NETWORK_EXPECTED = 'a network in CIDR form such as "10.20.0.0/16" or "fd00::/8", or an IP address';
const network: Parser<string> = {
  expected: NETWORK_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, NETWORK_EXPECTED).trim();
    if (!parseNetwork(s)) throw must(NETWORK_EXPECTED, v);
    return s;
  },
};

const filePath: Parser<string> = {
  expected: 'a file system path',
  parse: (v, ctx) => path.resolve(ctx.baseDir, scalarText(v, ctx, 'a file system path')),
};

interface HostPort {
  readonly host: string;
  readonly port: number;
}

const ADDR_EXPECTED = 'a "host:port" address such as "0.0.0.0:6060", ":6060" or "[::1]:6060"';
/** Go net.Listen address: "host:port", ":port" (all IPv4 interfaces), "[v6]:port". */
const listenAddress: Parser<HostPort> = {
  expected: ADDR_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, ADDR_EXPECTED).trim();
    const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d+)$/.exec(s);
    const host = m ? (m[1] ?? m[2] ?? '') : '';
    const p = m ? Number(m[3]) : NaN;
    if (!m || p > 65535 || (m[1] !== undefined && isIP(host) !== 6)) throw must(ADDR_EXPECTED, v);
    return { host: host === '' ? ALL_INTERFACES : host, port: p };
  },
};

const ENV_ADDR_EXPECTED = `${ADDR_EXPECTED}, or a host alone such as "0.0.0.0" (the port is then the configured one)`;
/** TARSIER_API_ADDR / TARSIER_HEALTH_ADDR: an address as in the file, or a host alone, which keeps the configured port. */
const envListenAddress: Parser<{ readonly host: string; readonly port?: number }> = {
  expected: ENV_ADDR_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, ENV_ADDR_EXPECTED).trim();
    const bare = /^\[([^\]]*)\]$/.exec(s)?.[1] ?? s;
    // A host name has a letter: "6060" alone is a port given in the wrong place, not a host.
    if (isIP(bare) !== 0 || /^(?=.*[a-z])[a-z0-9.-]+$/i.test(bare)) return { host: bare };
    try {
      return listenAddress.parse(s, ctx);
    } catch {
      throw must(ENV_ADDR_EXPECTED, v);
    }
  },
};

/** Whether the API requires a credential: clair.api.auth has a token or a key. */
export function authConfigured(auth: Pick<Config['api']['auth'], 'tokens' | 'psk'>): boolean {
  return auth.tokens.length > 0 || auth.psk !== null;
}

const KEY_EXPECTED = `${PAGINATION_KEY_BYTES} bytes, base64 or 64 hex characters`;
/** Clair/Fernet key format: 32 bytes as base64 (standard or URL-safe alphabet, padded or not) or 64 hex characters. */
const paginationKey: Parser<Buffer> = {
  expected: KEY_EXPECTED,
  parse(v, ctx) {
    const s = scalarText(v, ctx, KEY_EXPECTED, true).trim();
    const key = /^[0-9a-f]{64}$/i.test(s) ? Buffer.from(s, 'hex') : decodeBase64(s);
    if (key === null || key.length !== PAGINATION_KEY_BYTES) throw must(KEY_EXPECTED, v, true);
    return key;
  },
};

const PSK_EXPECTED = `base64 for a key of at least ${MIN_PSK_BYTES} bytes`;
const psk: Parser<Buffer> = {
  expected: PSK_EXPECTED,
  parse(v, ctx) {
    const key = decodeBase64(scalarText(v, ctx, PSK_EXPECTED, true).trim());
    if (key === null || key.length < MIN_PSK_BYTES) throw must(PSK_EXPECTED, v, true);
    return key;
  },
};

/** Standard or URL-safe alphabet (not mixed), padding optional. Null when not base64. */
function decodeBase64(s: string): Buffer | null {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(s) || (/[+/]/.test(s) && /[-_]/.test(s))) return null;
  const bare = s.replace(/=+$/, '');
  if (bare.length % 4 === 1) return null;
  if (s.includes('=') && s.length % 4 !== 0) return null;
  return Buffer.from(bare.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

const databaseType: Parser<'pgsql'> = oneOf(['pgsql'] as const);

const SOURCE_EXPECTED = 'a PostgreSQL URL (postgres://…) or a libpq "keyword=value …" connection string';
const connectionSource: Parser<PoolConfig> = {
  expected: SOURCE_EXPECTED,
  parse: (v, ctx) => parseConnectionSource(scalarText(v, ctx, SOURCE_EXPECTED, true), ctx.baseDir),
};

const logLevel = oneOf(LOG_LEVELS, LOG_LEVEL_ALIASES);

// ---------------------------------------------------------------------------------------------
// THE table: every accepted key under `clair:`, with its parser and default.
//   use: 'tarsier' = read by Tarsier; 'ignored' = accepted for Clair compatibility, not used.

interface LeafSpec {
  readonly kind: 'leaf';
  readonly parser: Parser<unknown>;
  /** Raw default, run through the parser like a file value; undefined = no value. */
  readonly default: unknown;
  readonly use: 'tarsier' | 'ignored';
}
interface SectionSpec {
  readonly kind: 'section';
  readonly keys: Readonly<Record<string, Spec>>;
}
interface MapSpec {
  readonly kind: 'map';
  /** Checks an entry name; returns the canonical name or throws Problem. */
  readonly name: (name: string) => string;
  readonly value: SectionSpec;
}
type Spec = LeafSpec | SectionSpec | MapSpec;

const leaf = (parser: Parser<unknown>, dflt?: unknown): LeafSpec => ({ kind: 'leaf', parser, default: dflt, use: 'tarsier' });
const ignored = (): LeafSpec => ({ kind: 'leaf', parser: anything, default: undefined, use: 'ignored' });
const section = (keys: Record<string, Spec>): SectionSpec => ({ kind: 'section', keys });

const updaterName = (name: string): string => {
  const n = name.toLowerCase();
  if (!UPDATER_NAMES.includes(n)) {
    throw new Problem(`unknown updater ${JSON.stringify(name)} (valid: ${UPDATER_NAMES.join(', ')})`);
  }
  return n;
};

/** Docker's names for Docker Hub, which references and credentials may use. */
const REGISTRY_HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[a-f0-9:]+\])(?::[0-9]{1,5})?$/;

/** A registry as references name it: lower case host[:port], Docker Hub as docker.io. */
const registryHost = (name: string): string => {
  const host = name.toLowerCase();
  if (!REGISTRY_HOST.test(host))
    throw new Problem(`${JSON.stringify(name)} is not a registry host[:port] such as "ghcr.io" or "localhost:5000"`);
  return canonicalRegistry(host);
};

const SCHEMA: SectionSpec = section({
  database: section({
    type: leaf(databaseType), // Clair: driver name; only pgsql exists
    datadir: leaf(filePath), // Tarsier: embedded PostgreSQL data directory (default applied in build)
    options: section({
      source: leaf(connectionSource),
      paginationkey: leaf(paginationKey), // Clair v3 place
      maxopenconnections: leaf(integer(0), DEFAULT_MAX_CONNECTIONS),
      cachesize: ignored(),
      managedatabaselifecycle: ignored(),
      fixturepath: ignored(),
      readonly: ignored(),
    }),
  }),
  api: section({
    port: leaf(port), // Clair v2
    healthport: leaf(port), // Clair v2
    addr: leaf(listenAddress), // Clair v3; default in build(): it depends on api.auth
    healthaddr: leaf(listenAddress), // Clair v3
    timeout: leaf(duration, '900s'),
    bodytimeout: leaf(positiveDuration, '30s'),
    headertimeout: leaf(positiveDuration, '60s'),
    idletimeout: leaf(positiveDuration, '72s'),
    uploadidletimeout: leaf(positiveDuration, '30s'),
    grpcport: leaf(port),
    paginationkey: leaf(paginationKey), // Clair v2 place
    certfile: leaf(filePath),
    keyfile: leaf(filePath),
    cafile: leaf(filePath),
    servername: ignored(),
    v1revision: leaf(
      oneOf(['A', 'B'] as const, {}, (s) => s.toUpperCase()),
      'B',
    ),
    localroots: leaf(list(filePath), []),
    auth: section({
      tokens: leaf(list(text(true)), []),
      psk: leaf(psk),
      requireexp: leaf(boolean, false),
      sessionidle: leaf(positiveDuration, '30m'),
      sessionlifetime: leaf(positiveDuration, '8h'),
    }),
  }),
  worker: section({
    namespace_detectors: ignored(),
    feature_listers: ignored(),
  }),
  indexer: section({
    downloadtimeout: leaf(duration, '15m'),
    maxlayerbytes: leaf(byteSize, '10GiB'),
    maxexpandedbytes: leaf(byteSize, '50GiB'),
    maxfilebytes: leaf(byteSize, '200MiB'),
    denyprivate: leaf(boolean, false),
    allownetworks: leaf(list(network), []),
  }),
  updater: section({
    interval: leaf(duration, '2h'),
    maxdataage: leaf(duration, '120h'),
    enabledupdaters: leaf(
      list(text()),
      SOURCE_CATALOG.filter((s) => s.alternativeTo === undefined).map((s) => s.name),
    ),
    sources: { kind: 'map', name: updaterName, value: section({ url: leaf(sourceUrl), ecosystems: leaf(list(ecosystemName)) }) },
  }),
  notifier: section({
    attempts: leaf(integer(1), 5),
    renotifyinterval: leaf(duration, '2h'),
    endpoints: leaf(list(httpUrl), []),
    secret: leaf(text(true), ''),
    retention: leaf(duration, '720h'),
    onenrichment: leaf(boolean, false),
    http: section({
      endpoint: leaf(httpUrl),
      servername: leaf(text(), ''),
      cafile: leaf(filePath),
      certfile: leaf(filePath),
      keyfile: leaf(filePath),
      proxy: leaf(httpUrl),
    }),
    stomp: section({
      brokers: ignored(),
      destination: ignored(),
      cafile: ignored(),
      keyfile: ignored(),
      certfile: ignored(),
      failoverretrydelay: ignored(),
    }),
  }),
  registries: {
    kind: 'map',
    name: registryHost,
    value: section({
      username: leaf(text(), ''),
      password: leaf(text(true), ''),
      token: leaf(text(true), ''),
      insecure: leaf(boolean, false),
    }),
  },
  webhooks: section({
    secret: leaf(text(true), ''),
  }),
  images: section({
    untaggedretention: leaf(duration, '720h'),
    workers: leaf(integer(1, 64), 2),
    attempts: leaf(integer(1, 100), 5),
  }),
  log: section({
    level: leaf(logLevel, 'info'),
  }),
});

// ---------------------------------------------------------------------------------------------
// Step 1: YAML → checked values, one per dotted key ("api.port").

type Segment = string | number;

interface Slot {
  readonly value: unknown;
  /** True when the file gave a value (not null, not ""); false = the table default. */
  readonly given: boolean;
}

class Source {
  readonly lines = new LineCounter();
  doc: Document | null = null;
  /** Dotted key → the path of original (as-written) keys in the YAML document. */
  readonly origin = new Map<string, Segment[]>();
  constructor(
    readonly name: string | undefined,
    readonly baseDir: string,
  ) {}

  /** `clair.api.port: <msg> (file:line)`; `index` names one element of a list value. */
  error(key: string, msg: string, opts: { keyItself?: boolean; index?: number | undefined } = {}): ConfigError {
    const where = this.line(key, opts.keyItself ?? false, opts.index);
    const loc = where === undefined ? '' : this.name === undefined ? ` (line ${where})` : ` (${this.name}:${where})`;
    const full = (key === '' ? 'clair' : `clair.${key}`) + (opts.index === undefined ? '' : `[${opts.index}]`);
    return new ConfigError(`${full}: ${msg}${loc}`, { key: full });
  }

  sourceText(orig: Segment[]): string | undefined {
    const node = this.doc?.getIn(orig, true);
    return isScalar(node) && typeof node.source === 'string' ? node.source : undefined;
  }

  private line(key: string, keyItself: boolean, index: number | undefined): number | undefined {
    const base = this.origin.get(key);
    if (!this.doc || !base) return undefined;
    const orig = index === undefined ? base : [...base, index];
    let node: unknown;
    if (keyItself && orig.length > 0) {
      const parent = orig.length === 1 ? this.doc.contents : this.doc.getIn(orig.slice(0, -1), true);
      const last = orig[orig.length - 1];
      node = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && String(p.key.value) === String(last))?.key : undefined;
    } else {
      node = this.doc.getIn(orig, true);
    }
    const offset = (node as { range?: [number, number, number] } | undefined)?.range?.[0];
    return offset === undefined ? undefined : this.lines.linePos(offset).line;
  }
}

const isUnset = (v: unknown): boolean => v === undefined || v === null || v === '';
const isPlainMapping = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function walk(spec: SectionSpec, value: unknown, key: string, orig: Segment[], src: Source, out: Map<string, Slot>): void {
  const entries = matchKeys(value, key, orig, src, (name, childKey) => {
    if (spec.keys[name] === undefined) {
      const known = Object.keys(spec.keys).sort().join(', ');
      throw src.error(childKey, `unknown key (known keys under ${key === '' ? 'clair' : `clair.${key}`}: ${known})`, { keyItself: true });
    }
    return name;
  });
  for (const [name, child] of Object.entries(spec.keys)) {
    const childKey = key === '' ? name : `${key}.${name}`;
    const hit = entries.get(name);
    const childOrig = hit ? [...orig, hit.orig] : orig;
    switch (child.kind) {
      case 'section':
        walk(child, hit?.value, childKey, childOrig, src, out);
        break;
      case 'map':
        walkMap(child, hit?.value, childKey, childOrig, src, out);
        break;
      case 'leaf': {
        const given = hit !== undefined && !isUnset(hit.value);
        const raw = given ? hit.value : child.default;
        if (raw === undefined) {
          out.set(childKey, { value: undefined, given: false });
          break;
        }
        try {
          const ctx: Ctx = { baseDir: src.baseDir, sourceText: given && typeof raw !== 'string' ? src.sourceText(childOrig) : undefined };
          out.set(childKey, { value: child.parser.parse(raw, ctx), given });
        } catch (e) {
          if (e instanceof Problem) throw src.error(childKey, e.message, { index: e.index });
          throw e;
        }
        break;
      }
    }
  }
}

function walkMap(spec: MapSpec, value: unknown, key: string, orig: Segment[], src: Source, out: Map<string, Slot>): void {
  const entries = matchKeys(value, key, orig, src, (name, childKey) => {
    try {
      return spec.name(name);
    } catch (e) {
      if (e instanceof Problem) throw src.error(childKey, e.message, { keyItself: true });
      throw e;
    }
  });
  for (const [name, hit] of entries) walk(spec.value, hit.value, `${key}.${name}`, [...orig, hit.orig], src, out);
  // The map's own slot lists its entry names, so the config can be built from them.
  out.set(key, { value: [...entries.keys()], given: entries.size > 0 });
}

/** Lower-cases the keys of a YAML mapping, rejecting non-mappings, bad names and case-duplicates. */
function matchKeys(
  value: unknown,
  key: string,
  orig: Segment[],
  src: Source,
  canonical: (lowerName: string, childKey: string) => string,
): Map<string, { value: unknown; orig: string }> {
  const entries = new Map<string, { value: unknown; orig: string }>();
  if (isUnset(value)) return entries;
  if (!isPlainMapping(value)) throw src.error(key, `must be a mapping (got ${got(value)})`);
  for (const [origName, v] of Object.entries(value)) {
    const lower = origName.toLowerCase();
    const childKey = key === '' ? lower : `${key}.${lower}`;
    src.origin.set(childKey, [...orig, origName]);
    const name = canonical(lower, childKey);
    const prev = entries.get(name);
    if (prev) {
      throw src.error(
        childKey,
        `given twice (as ${JSON.stringify(prev.orig)} and ${JSON.stringify(origName)}; keys are case-insensitive)`,
        {
          keyItself: true,
        },
      );
    }
    entries.set(name, { value: v, orig: origName });
  }
  return entries;
}

// ---------------------------------------------------------------------------------------------
// Step 2: checked values + env → Config.

class Values {
  constructor(
    private readonly slots: Map<string, Slot>,
    private readonly src: Source,
  ) {}
  given(key: string): boolean {
    return this.slots.get(key)?.given ?? false;
  }
  get<T>(key: string): T {
    const slot = this.slots.get(key);
    if (!slot) throw new Error(`config: no such key in SCHEMA: ${key}`);
    return slot.value as T;
  }
  opt<T>(key: string): T | undefined {
    return this.given(key) ? this.get<T>(key) : undefined;
  }
  error(key: string, msg: string, index?: number): ConfigError {
    return this.src.error(key, msg, { index });
  }
}

type Env = Record<string, string | undefined>;

function envValue(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function fromEnv<T>(env: Env, name: string, parser: Parser<T>, cwd: string): T | undefined {
  const v = envValue(env, name);
  if (v === undefined) return undefined;
  try {
    return parser.parse(v, { baseDir: cwd, sourceText: undefined });
  } catch (e) {
    if (e instanceof Problem) throw new ConfigError(`${name}: ${e.message}`, { key: name });
    throw e;
  }
}

const DATABASE_URL_EXPECTED = 'a postgres:// or postgresql:// URL';
const databaseUrl: Parser<PoolConfig> = {
  expected: DATABASE_URL_EXPECTED,
  parse(v) {
    const s = String(v).trim();
    if (!/^postgres(?:ql)?:\/\//i.test(s)) throw must(DATABASE_URL_EXPECTED, v, true);
    return parsePostgresUrl(s);
  },
};

function build(vals: Values, env: Env): Config {
  const cwd = process.cwd();

  const auth = {
    tokens: vals.get<string[]>('api.auth.tokens'),
    psk: vals.opt<Buffer>('api.auth.psk') ?? null,
    requireExp: vals.get<boolean>('api.auth.requireexp'),
    sessionIdleMs: vals.get<number>('api.auth.sessionidle'),
    sessionLifetimeMs: vals.get<number>('api.auth.sessionlifetime'),
  };
  // An API anyone can call is not offered beyond this machine unless an address says so.
  const defaultHost = authConfigured(auth) ? ALL_INTERFACES : LOOPBACK_HOST;
  const listen = (keys: { port: string; addr: string }, envNames: { addr: string; port: string }, defaultPort: number): HostPort => {
    if (vals.given(keys.port) && vals.given(keys.addr)) {
      throw vals.error(keys.addr, `give one of clair.${keys.port} (Clair v2) or clair.${keys.addr} (Clair v3), not both`);
    }
    const fromFile: HostPort = vals.opt<HostPort>(keys.addr) ?? { host: defaultHost, port: vals.opt<number>(keys.port) ?? defaultPort };
    const envAddr = fromEnv(env, envNames.addr, envListenAddress, cwd);
    const hp: HostPort = envAddr ? { host: envAddr.host, port: envAddr.port ?? fromFile.port } : fromFile;
    const envPort = fromEnv(env, envNames.port, port, cwd);
    return envPort === undefined ? hp : { host: hp.host, port: envPort };
  };
  const main = listen({ port: 'api.port', addr: 'api.addr' }, { addr: ENV.apiAddr, port: ENV.apiPort }, DEFAULT_API_PORT);
  const health = listen(
    { port: 'api.healthport', addr: 'api.healthaddr' },
    { addr: ENV.healthAddr, port: ENV.healthPort },
    DEFAULT_HEALTH_PORT,
  );

  if (vals.given('api.paginationkey') && vals.given('database.options.paginationkey')) {
    throw vals.error(
      'database.options.paginationkey',
      'give one of clair.api.paginationkey (Clair v2) or clair.database.options.paginationkey (Clair v3), not both',
    );
  }
  const paginationKey = vals.opt<Buffer>('api.paginationkey') ?? vals.opt<Buffer>('database.options.paginationkey') ?? null;

  const tls = pemFiles(vals, 'api', true);
  const notifierTls = pemFiles(vals, 'notifier.http', false);

  const endpoints: string[] = [];
  const seen = new Set<string>();
  for (const url of [vals.opt<string>('notifier.http.endpoint'), ...vals.get<string[]>('notifier.endpoints')]) {
    if (url === undefined) continue;
    const norm = new URL(url).href;
    if (!seen.has(norm)) {
      seen.add(norm);
      endpoints.push(url);
    }
  }

  const enabledUpdaters: UpdaterName[] = [];
  vals.get<string[]>('updater.enabledupdaters').forEach((raw, i) => {
    const name = raw.trim().toLowerCase();
    const mapped = sourceNamed(name);
    if (mapped === undefined) {
      throw vals.error('updater.enabledupdaters', `unknown updater ${JSON.stringify(raw)} (valid: ${UPDATER_NAMES.join(', ')})`, i);
    }
    if (mapped !== null && !enabledUpdaters.includes(mapped)) enabledUpdaters.push(mapped);
  });
  for (const { name, alternativeTo } of SOURCE_CATALOG) {
    if (alternativeTo !== undefined && enabledUpdaters.includes(name) && enabledUpdaters.includes(alternativeTo)) {
      throw vals.error(
        'updater.enabledupdaters',
        `${name} and ${alternativeTo} feed the same distributions (their vulnerabilities would be reported twice): enable one of them`,
      );
    }
  }
  const sources: Record<string, { url: string; ecosystems?: string[] }> = {};
  for (const { name, url, takesEcosystems } of SOURCE_CATALOG) {
    const ecosystems = vals.opt<string[]>(`updater.sources.${name}.ecosystems`);
    if (ecosystems !== undefined && !takesEcosystems)
      throw vals.error(`updater.sources.${name}.ecosystems`, `the ${name} source reads no application ecosystems`);
    sources[name] = {
      url: vals.opt<string>(`updater.sources.${name}.url`) ?? url,
      ...(ecosystems ? { ecosystems: [...new Set(ecosystems)] } : {}),
    };
  }

  const maxOpen = vals.get<number>('database.options.maxopenconnections');
  const chosenDataDir = fromEnv(env, ENV.dataDir, filePath, cwd) ?? vals.opt<string>('database.datadir');
  const dataDir = chosenDataDir ?? path.resolve(cwd, 'data', 'postgres');

  return {
    api: {
      host: main.host,
      port: main.port,
      healthHost: health.host,
      healthPort: health.port,
      timeoutMs: vals.get<number>('api.timeout'),
      bodyTimeoutMs: vals.get<number>('api.bodytimeout'),
      headerTimeoutMs: vals.get<number>('api.headertimeout'),
      idleTimeoutMs: vals.get<number>('api.idletimeout'),
      uploadIdleTimeoutMs: vals.get<number>('api.uploadidletimeout'),
      grpcPort: vals.opt<number>('api.grpcport') ?? null,
      paginationKey,
      v1Revision: vals.get<'A' | 'B'>('api.v1revision'),
      localRoots: [...new Set(vals.get<string[]>('api.localroots'))],
      auth,
      tls: { certFile: tls.certfile, keyFile: tls.keyfile, caFile: tls.cafile },
    },
    database: {
      connection: fromEnv(env, ENV.databaseUrl, databaseUrl, cwd) ?? vals.opt<PoolConfig>('database.options.source') ?? null,
      maxConnections: maxOpen === 0 ? DEFAULT_MAX_CONNECTIONS : maxOpen,
      dataDir,
      dataDirIsDefault: chosenDataDir === undefined,
    },
    indexer: {
      downloadTimeoutMs: vals.get<number>('indexer.downloadtimeout'),
      maxLayerBytes: vals.get<number>('indexer.maxlayerbytes'),
      maxExpandedBytes: vals.get<number>('indexer.maxexpandedbytes'),
      maxFileBytes: vals.get<number>('indexer.maxfilebytes'),
      denyPrivate: vals.get<boolean>('indexer.denyprivate'),
      allowNetworks: vals.get<string[]>('indexer.allownetworks'),
    },
    updater: {
      intervalMs: vals.get<number>('updater.interval'),
      maxDataAgeMs: vals.get<number>('updater.maxdataage'),
      enabledUpdaters,
      sources,
    },
    notifier: {
      attempts: vals.get<number>('notifier.attempts'),
      renotifyIntervalMs: vals.get<number>('notifier.renotifyinterval'),
      endpoints,
      http: {
        serverName: vals.get<string>('notifier.http.servername'),
        caFile: notifierTls.cafile,
        certFile: notifierTls.certfile,
        keyFile: notifierTls.keyfile,
        proxy: vals.opt<string>('notifier.http.proxy') ?? '',
      },
      secret: vals.get<string>('notifier.secret'),
      retentionMs: vals.get<number>('notifier.retention'),
      onEnrichment: vals.get<boolean>('notifier.onenrichment'),
    },
    registries: Object.fromEntries(
      (vals.opt<string[]>('registries') ?? []).map((host) => [
        host,
        {
          username: vals.get<string>(`registries.${host}.username`),
          password: vals.get<string>(`registries.${host}.password`),
          token: vals.get<string>(`registries.${host}.token`),
          insecure: vals.get<boolean>(`registries.${host}.insecure`),
        },
      ]),
    ),
    webhooks: { secret: vals.get<string>('webhooks.secret') },
    images: {
      untaggedRetentionMs: vals.get<number>('images.untaggedretention'),
      workers: vals.get<number>('images.workers'),
      attempts: vals.get<number>('images.attempts'),
    },
    log: { level: fromEnv(env, ENV.logLevel, logLevel, cwd) ?? vals.get<LogLevel>('log.level') },
  };
}

/** certfile and keyfile come together; cafile needs them for the API (it requires client certs). */
function pemFiles(vals: Values, prefix: string, caNeedsCert: boolean): { certfile: string; keyfile: string; cafile: string } {
  const certfile = vals.opt<string>(`${prefix}.certfile`) ?? '';
  const keyfile = vals.opt<string>(`${prefix}.keyfile`) ?? '';
  const cafile = vals.opt<string>(`${prefix}.cafile`) ?? '';
  if (certfile !== '' && keyfile === '') throw vals.error(`${prefix}.keyfile`, `must be set when clair.${prefix}.certfile is set`);
  if (keyfile !== '' && certfile === '') throw vals.error(`${prefix}.certfile`, `must be set when clair.${prefix}.keyfile is set`);
  if (caNeedsCert && cafile !== '' && certfile === '') {
    throw vals.error(
      `${prefix}.cafile`,
      `needs clair.${prefix}.certfile and clair.${prefix}.keyfile (the CA verifies client certificates of the TLS server)`,
    );
  }
  return { certfile, keyfile, cafile };
}

// ---------------------------------------------------------------------------------------------
// database.options.source: postgres URL or libpq keyword/value string → pg.PoolConfig

function parsePostgresUrl(s: string): PoolConfig {
  try {
    new URL(s);
  } catch {
    throw new Problem('must be a valid postgres:// URL (the value could not be parsed as a URL)');
  }
  return { connectionString: s };
}

/** libpq keywords Tarsier understands, mapped onto pg's client config. */
const LIBPQ_KEYWORDS = [
  'host',
  'hostaddr',
  'port',
  'dbname',
  'user',
  'password',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'connect_timeout',
  'application_name',
  'fallback_application_name',
  'options',
  'client_encoding',
  'keepalives',
  'keepalives_idle',
  // Server run-time parameters that lib/pq (Clair's driver) passed through and pg supports:
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
] as const;
type LibpqKeyword = (typeof LIBPQ_KEYWORDS)[number];

function parseConnectionSource(s: string, baseDir: string): PoolConfig {
  const trimmed = s.trim();
  if (/^postgres(?:ql)?:\/\//i.test(trimmed)) return parsePostgresUrl(trimmed);
  const kv = tokenizeLibpq(trimmed);
  const intOf = (k: LibpqKeyword, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const v = kv.get(k);
    if (v === undefined) return undefined;
    const n = /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new Problem(`${k} must be an integer between ${min} and ${max} (got ${JSON.stringify(v)})`);
    }
    return n;
  };
  const cfg: PoolConfig = {};
  const host = kv.get('host') ?? kv.get('hostaddr');
  if (host !== undefined) cfg.host = host;
  const p = intOf('port', 1, 65535);
  if (p !== undefined) cfg.port = p;
  if (kv.has('user')) cfg.user = kv.get('user');
  if (kv.has('password')) cfg.password = kv.get('password');
  if (kv.has('dbname')) cfg.database = kv.get('dbname');
  const connectTimeout = intOf('connect_timeout', 0);
  if (connectTimeout !== undefined) cfg.connectionTimeoutMillis = connectTimeout * 1000;
  for (const k of ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout'] as const) {
    const n = intOf(k, 0);
    if (n !== undefined) cfg[k] = n;
  }
  for (const k of ['application_name', 'fallback_application_name', 'options', 'client_encoding'] as const) {
    const v = kv.get(k);
    if (v !== undefined) cfg[k] = v;
  }
  const keepalives = intOf('keepalives', 0, 1);
  if (keepalives !== undefined) cfg.keepAlive = keepalives === 1;
  const keepalivesIdle = intOf('keepalives_idle', 0);
  if (keepalivesIdle !== undefined) cfg.keepAliveInitialDelayMillis = keepalivesIdle * 1000;
  const ssl = sslOptions(kv, baseDir);
  if (ssl !== undefined) cfg.ssl = ssl;
  return cfg;
}

function sslOptions(kv: Map<string, string>, baseDir: string): boolean | ConnectionOptions | undefined {
  const mode = kv.get('sslmode');
  const modes = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];
  if (mode !== undefined && !modes.includes(mode)) {
    throw new Problem(`sslmode must be one of ${modes.join(', ')} (got ${JSON.stringify(mode)})`);
  }
  // node-postgres cannot fall back between plain and TLS connections: allow/prefer connect without TLS.
  if (mode === 'disable' || mode === 'allow' || mode === 'prefer') return false;
  const read = (k: 'sslrootcert' | 'sslcert' | 'sslkey'): Buffer | undefined => {
    const file = kv.get(k);
    if (file === undefined) return undefined;
    const abs = path.resolve(baseDir, file);
    try {
      return readFileSync(abs);
    } catch (e) {
      throw new Problem(`${k}: cannot read ${JSON.stringify(abs)} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
  };
  const ca = read('sslrootcert');
  const cert = read('sslcert');
  const key = read('sslkey');
  const noFiles = ca === undefined && cert === undefined && key === undefined;
  if (noFiles && mode === undefined) return undefined; // node-postgres default: no TLS
  if (noFiles && mode === 'verify-full') return true;
  // libpq: "require" with a root certificate behaves like verify-ca; files without a mode: verify fully.
  const effective = mode === 'require' && ca !== undefined ? 'verify-ca' : (mode ?? 'verify-full');
  const opts: ConnectionOptions = { rejectUnauthorized: effective !== 'require' };
  if (effective === 'verify-ca') opts.checkServerIdentity = () => undefined;
  if (ca !== undefined) opts.ca = ca;
  if (cert !== undefined) opts.cert = cert;
  // pg makes ssl.key non-enumerable (keeps it out of logs); do it here so that the frozen object
  // already has that shape and pg's Object.defineProperty does not throw on it.
  if (key !== undefined) Object.defineProperty(opts, 'key', { value: key, enumerable: false, writable: true, configurable: true });
  return opts;
}

/** libpq keyword/value syntax: `k=v k2 = 'quoted \' value'`; backslash escapes in both forms. */
function tokenizeLibpq(s: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = 0;
  const ws = (): void => {
    while (i < s.length && /\s/.test(s[i] ?? '')) i++;
  };
  while (true) {
    ws();
    if (i >= s.length) break;
    const start = i;
    while (i < s.length && /[A-Za-z0-9_]/.test(s[i] ?? '')) i++;
    const keyword = s.slice(start, i).toLowerCase();
    ws();
    if (keyword === '' || s[i] !== '=') {
      throw new Problem(
        `must be a PostgreSQL URL or "keyword=value" pairs (missing "=" after ${JSON.stringify(s.slice(start, i + 1) || s.slice(start, start + 1))})`,
      );
    }
    i++;
    ws();
    let value = '';
    if (s[i] === "'") {
      i++;
      let closed = false;
      while (i < s.length) {
        const c = s[i++] ?? '';
        if (c === '\\' && i < s.length) value += s[i++] ?? '';
        else if (c === "'") {
          closed = true;
          break;
        } else value += c;
      }
      if (!closed) throw new Problem(`unterminated quoted value for ${keyword}`);
    } else {
      while (i < s.length && !/\s/.test(s[i] ?? '')) {
        const c = s[i++] ?? '';
        if (c === '\\' && i < s.length) value += s[i++] ?? '';
        else value += c;
      }
    }
    if (!(LIBPQ_KEYWORDS as readonly string[]).includes(keyword)) {
      throw new Problem(`unknown connection keyword ${JSON.stringify(keyword)} (known: ${LIBPQ_KEYWORDS.join(', ')})`);
    }
    out.set(keyword, value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Entry points

/** Parses a config file's text. `source` (the file path) is used for messages and as the base
 * directory for relative paths; without it the cwd is the base. */
export function parseConfig(yamlText: string, env: Record<string, string | undefined> = {}, source?: string): Config {
  const baseDir = source === undefined ? process.cwd() : path.dirname(path.resolve(source));
  const src = new Source(source, baseDir);
  const doc = parseDocument(yamlText, { lineCounter: src.lines, prettyErrors: true, merge: true });
  const where = source ?? 'config';
  const first = doc.errors[0];
  if (first) {
    const message = (first.message.split('\n')[0] ?? '').replace(/:$/, '');
    throw new ConfigError(`${where}: invalid YAML: ${message}`, { key: where, cause: first });
  }
  src.doc = doc;
  const root: unknown = doc.toJS({ maxAliasCount: 1000 });
  let clair: unknown;
  if (!isUnset(root)) {
    if (!isPlainMapping(root))
      throw new ConfigError(`${where}: must be a mapping with the top-level key "clair" (got ${got(root)})`, { key: where });
    const keys = Object.keys(root);
    const clairKey = keys.find((k) => k.toLowerCase() === 'clair');
    const other = keys.find((k) => k !== clairKey);
    if (clairKey === undefined) {
      throw new ConfigError(
        `clair: missing top-level key in ${where} (Tarsier and Clair put every setting under "clair:"${other === undefined ? '' : `; found ${JSON.stringify(other)}`})`,
        { key: 'clair' },
      );
    }
    if (other !== undefined) {
      throw new ConfigError(`${other}: unknown top-level key in ${where} (every setting goes under "clair:")`, { key: other });
    }
    clair = root[clairKey];
    src.origin.set('', [clairKey]);
  }
  const slots = new Map<string, Slot>();
  walk(SCHEMA, clair, '', src.origin.get('') ?? [], src, slots);
  return deepFreeze(build(new Values(slots, src), env));
}

/** Builds the Config: reads the file named by `file` (--config) or else env.TARSIER_CONFIG (none: all
 * defaults), then applies env overrides. `env` is passed in (normally process.env); never read here. */
export function loadConfig(options: { file?: string; env?: Record<string, string | undefined> }): Config {
  const env = options.env ?? {};
  const fromFlag = options.file !== undefined && options.file !== '';
  const file = fromFlag ? options.file : envValue(env, ENV.config);
  if (file === undefined) return parseConfig('', env);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const name = fromFlag ? '--config' : ENV.config;
    throw new ConfigError(`${name}: cannot read config file ${JSON.stringify(file)} (${(e as NodeJS.ErrnoException).code ?? String(e)})`, {
      key: name,
      cause: e,
    });
  }
  return parseConfig(text, env, file);
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  return Object.freeze(value);
}
