import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseByteSize, parseConfig, parseDuration, type Config } from '../src/config.js';
import { SOURCE_CATALOG } from '../src/ecosystems/catalog.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, 'fixtures', 'config');
const fixture = (name: string): string => path.join(fixtures, name);
const readFixture = (name: string): string => readFileSync(fixture(name), 'utf8');

// The catalog's sources (test/ecosystems/catalog.test.ts checks the configuration against it).
const DEFAULT_SOURCES = Object.fromEntries(SOURCE_CATALOG.map((s) => [s.name, { url: s.url }]));
/** Every source but the alternatives (rhel-vex), which are enabled only instead of their source. */
const ALL_UPDATERS = [
  'debian',
  'ubuntu',
  'alpine',
  'wolfi',
  'rhel',
  'oracle',
  'amzn',
  'suse',
  'photon',
  'azurelinux',
  'osv',
  'nvd',
  'epss',
  'kev',
];

const DEFAULTS: Config = {
  api: {
    host: '127.0.0.1',
    port: 6060,
    healthHost: '127.0.0.1',
    healthPort: 6061,
    timeoutMs: 900_000,
    bodyTimeoutMs: 30_000,
    headerTimeoutMs: 60_000,
    idleTimeoutMs: 72_000,
    uploadIdleTimeoutMs: 30_000,
    grpcPort: null,
    paginationKey: null,
    v1Revision: 'B',
    localRoots: [],
    auth: { tokens: [], psk: null, requireExp: false, sessionIdleMs: 30 * 60_000, sessionLifetimeMs: 8 * 3_600_000 },
    tls: { certFile: '', keyFile: '', caFile: '' },
  },
  database: { connection: null, maxConnections: 10, dataDir: path.resolve(process.cwd(), 'data/postgres'), dataDirIsDefault: true },
  indexer: {
    downloadTimeoutMs: 900_000,
    maxLayerBytes: 10 * 1024 ** 3,
    maxExpandedBytes: 50 * 1024 ** 3,
    maxFileBytes: 200 * 1024 ** 2,
    denyPrivate: false,
    allowNetworks: [],
  },
  updater: { intervalMs: 7_200_000, maxDataAgeMs: 120 * 3_600_000, enabledUpdaters: ALL_UPDATERS, sources: DEFAULT_SOURCES },
  notifier: {
    attempts: 5,
    renotifyIntervalMs: 7_200_000,
    endpoints: [],
    http: { serverName: '', caFile: '', certFile: '', keyFile: '', proxy: '' },
    secret: '',
    retentionMs: 720 * 3_600_000,
    onEnrichment: false,
  },
  registries: {},
  webhooks: { secret: '' },
  images: { untaggedRetentionMs: 720 * 3_600_000, workers: 2, attempts: 5 },
  log: { level: 'info' },
};

/** The message of the ConfigError thrown by fn (fails the test if fn does not throw one). */
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

const KEY_HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
const KEY_BYTES = Buffer.from(KEY_HEX, 'hex');

describe('defaults', () => {
  it('no file and no env gives every default', () => {
    expect(loadConfig({})).toEqual(DEFAULTS);
  });

  it('an empty file, a comment-only file and an empty clair: section give the defaults', () => {
    expect(parseConfig('')).toEqual(DEFAULTS);
    expect(parseConfig('# nothing here\n')).toEqual(DEFAULTS);
    expect(parseConfig('clair:\n')).toEqual(DEFAULTS);
    expect(parseConfig('clair:\n  api:\n  notifier:\n    http:\n')).toEqual(DEFAULTS);
  });

  it('TARSIER_CONFIG names the file when no --config is given; --config wins over it', () => {
    const cfg = loadConfig({ env: { TARSIER_CONFIG: fixture('clair-v3-dev.yaml') } });
    expect(cfg.api.port).toBe(6070);
    const flag = loadConfig({ file: fixture('clair-v2.yaml'), env: { TARSIER_CONFIG: fixture('clair-v3-dev.yaml') } });
    expect(flag.api.port).toBe(6060);
    expect(flag.notifier.attempts).toBe(3);
  });

  it('an empty TARSIER_CONFIG counts as unset', () => {
    expect(loadConfig({ env: { TARSIER_CONFIG: '' } })).toEqual(DEFAULTS);
  });
});

describe('unchanged Clair v2 config.yaml', () => {
  it('maps the sample', () => {
    const cfg = loadConfig({ file: fixture('clair-v2.yaml') });
    expect(cfg).toEqual({
      ...DEFAULTS,
      database: {
        ...DEFAULTS.database,
        connection: { host: 'localhost', port: 5432, user: 'postgres', ssl: false, statement_timeout: 60000 },
      },
      notifier: { ...DEFAULTS.notifier, attempts: 3 },
    });
  });

  it('maps port, healthport, timeout, paginationkey, interval, attempts, renotifyinterval and http.*', () => {
    const b64url = KEY_BYTES.toString('base64url');
    const text = readFixture('clair-v2.yaml')
      .replace('port: 6060', 'port: 7060')
      .replace('healthport: 6061', 'healthport: 7061')
      .replace('timeout: 900s', 'timeout: 90s')
      .replace('paginationkey:', `paginationkey: ${b64url}`)
      .replace('interval: 2h', 'interval: 1h30m')
      .replace('attempts: 3', 'attempts: 9')
      .replace('renotifyinterval: 2h', 'renotifyinterval: 45m')
      .replace('endpoint:', 'endpoint: http://receiver.example.com/notify')
      .replace(/servername:(?![\s\S]*servername:)/, 'servername: receiver.example.com') // the notifier.http one
      .replace('proxy:', 'proxy: http://proxy:3128');
    const cfg = parseConfig(text);
    expect(cfg.api.port).toBe(7060);
    expect(cfg.api.healthPort).toBe(7061);
    // A v2 config gives ports only: without api.auth, the API is not offered beyond this machine.
    expect([cfg.api.host, cfg.api.healthHost]).toEqual(['127.0.0.1', '127.0.0.1']);
    expect(cfg.api.timeoutMs).toBe(90_000);
    expect(cfg.api.paginationKey).toEqual(KEY_BYTES);
    expect(cfg.updater.intervalMs).toBe(5_400_000);
    expect(cfg.notifier.attempts).toBe(9);
    expect(cfg.notifier.renotifyIntervalMs).toBe(2_700_000);
    expect(cfg.notifier.endpoints).toEqual(['http://receiver.example.com/notify']);
    expect(cfg.notifier.http).toEqual({
      serverName: 'receiver.example.com',
      caFile: '',
      certFile: '',
      keyFile: '',
      proxy: 'http://proxy:3128',
    });
  });

  it('accepts and ignores the v2 code-only keys (managedatabaselifecycle, fixturepath, servername)', () => {
    const cfg = parseConfig(
      'clair:\n  database:\n    type: pgsql\n    options:\n      managedatabaselifecycle: true\n      fixturepath: /x.sql\n      cachesize: 0\n  api:\n    servername: clair.example.com\n',
    );
    expect(cfg).toEqual(DEFAULTS);
  });

  it('matches keys case-insensitively (Go field names)', () => {
    const cfg = parseConfig('Clair:\n  API:\n    Port: 7000\n    HealthPort: 7001\n  Notifier:\n    Attempts: 2\n');
    expect([cfg.api.port, cfg.api.healthPort, cfg.notifier.attempts]).toEqual([7000, 7001, 2]);
  });

  it('a bare 0 interval (yaml.v2 zero duration) disables the updater', () => {
    expect(parseConfig('clair:\n  updater:\n    interval: 0\n').updater.intervalMs).toBe(0);
  });
});

describe('unchanged Clair v3 config.yaml', () => {
  it('maps the sample', () => {
    const cfg = loadConfig({ file: fixture('clair-v3.yaml') });
    expect(cfg).toEqual({
      ...DEFAULTS,
      // The sample's addresses, 0.0.0.0: an address given is an address used.
      api: { ...DEFAULTS.api, host: '0.0.0.0', healthHost: '0.0.0.0' },
      database: {
        ...DEFAULTS.database,
        connection: { host: 'localhost', port: 5432, user: 'postgres', ssl: false, statement_timeout: 60000 },
      },
      updater: { ...DEFAULTS.updater, enabledUpdaters: ['debian', 'ubuntu', 'rhel', 'oracle', 'alpine', 'suse'] },
      notifier: { ...DEFAULTS.notifier, attempts: 3 },
    });
  });

  it('maps a development-3.0 config: addr, healthaddr, database.options.paginationkey, maxopenconnections, stomp', () => {
    const cfg = loadConfig({ file: fixture('clair-v3-dev.yaml') });
    expect(cfg.api).toEqual({
      ...DEFAULTS.api,
      host: '127.0.0.1',
      port: 6070,
      healthHost: '0.0.0.0',
      healthPort: 6071,
      timeoutMs: 30_000,
      paginationKey: Buffer.from('e6Y7vCf8kS7vX7lq5kWm3m0cQ0xL8v1sH2dG7cQ3Y1o=', 'base64'),
    });
    expect(cfg.database.connection).toEqual({ connectionString: 'postgresql://clair:s3cret@db.internal:5432/clair?sslmode=disable' });
    expect(cfg.database.maxConnections).toBe(25);
    expect(cfg.updater.intervalMs).toBe(1_800_000);
    expect(cfg.updater.enabledUpdaters).toEqual(['debian', 'ubuntu', 'rhel', 'oracle', 'alpine', 'suse']);
    expect(cfg.notifier).toEqual({
      ...DEFAULTS.notifier,
      attempts: 4,
      renotifyIntervalMs: 5_400_000,
      endpoints: ['https://hooks.example.com/clair'],
      http: { serverName: 'hooks.example.com', caFile: '', certFile: '', keyFile: '', proxy: 'http://proxy.example.com:3128' },
    });
  });

  it.each([
    ['"0.0.0.0:6060"', '0.0.0.0', 6060],
    ['":6062"', '0.0.0.0', 6062],
    ['"[::1]:6063"', '::1', 6063],
    ['"localhost:6064"', 'localhost', 6064],
    ['"10.1.2.3:0"', '10.1.2.3', 0],
  ])('addr %s → host %s port %d', (addr, host, port) => {
    const cfg = parseConfig(`clair:\n  api:\n    addr: ${addr}\n    healthaddr: ${addr}\n`);
    expect([cfg.api.host, cfg.api.port, cfg.api.healthHost, cfg.api.healthPort]).toEqual([host, port, host, port]);
  });

  it('paginationkey accepts standard and URL-safe base64, padded or not, and hex', () => {
    const key = Buffer.from('fbff00112233445566778899aabbccddeeff00112233445566778899aabbccff', 'hex');
    for (const text of [
      key.toString('base64'),
      key.toString('base64').replace(/=+$/, ''),
      key.toString('base64url'),
      `${key.toString('base64url')}=`,
      key.toString('hex').toUpperCase(),
    ]) {
      expect(parseConfig(`clair:\n  database:\n    options:\n      paginationkey: "${text}"\n`).api.paginationKey).toEqual(key);
      expect(parseConfig(`clair:\n  api:\n    paginationkey: "${text}"\n`).api.paginationKey).toEqual(key);
    }
  });

  it('an all-digit hex paginationkey is read from the YAML text, not as a number', () => {
    const digits = '0123456789'.repeat(6) + '0123';
    expect(parseConfig(`clair:\n  api:\n    paginationkey: ${digits}\n`).api.paginationKey).toEqual(Buffer.from(digits, 'hex'));
  });

  it('maps Clair updater names: amzn1/amzn2 → amzn, redhat → rhel, opensuse → suse, duplicates removed', () => {
    const cfg = parseConfig('clair:\n  updater:\n    enabledupdaters: [amzn1, amzn2, Redhat, rhel, suse, opensuse, NVD, redhat_pypi]\n');
    expect(cfg.updater.enabledUpdaters).toEqual(['amzn', 'rhel', 'suse', 'nvd']);
    expect(parseConfig('clair:\n  updater:\n    enabledupdaters: []\n').updater.enabledUpdaters).toEqual([]);
  });
});

describe('where the API listens', () => {
  it('on loopback when no address is given and the API needs no credential; on every interface when it needs one', () => {
    const listening = (yaml: string) => {
      const c = parseConfig(`clair:\n  api:\n${yaml}`);
      return [c.api.host, c.api.port, c.api.healthHost, c.api.healthPort];
    };
    expect(listening('    port: 7000\n')).toEqual(['127.0.0.1', 7000, '127.0.0.1', 6061]);
    expect(listening('    auth:\n      tokens: [t]\n')).toEqual(['0.0.0.0', 6060, '0.0.0.0', 6061]);
    expect(listening('    port: 7000\n    auth:\n      psk: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n')).toEqual([
      '0.0.0.0',
      7000,
      '0.0.0.0',
      6061,
    ]);
    // An address given is used as given, with or without a credential.
    expect(listening('    addr: ":7000"\n    healthaddr: "127.0.0.1:7001"\n')).toEqual(['0.0.0.0', 7000, '127.0.0.1', 7001]);
  });
});

describe('the Docker image and docker compose', () => {
  const root = path.join(here, '..');

  it('listen on every interface of the container, with the ports of the configuration', () => {
    // The runtime stage's ENV lines, as Docker reads KEY=value pairs.
    const dockerEnv = Object.fromEntries(
      readFileSync(path.join(root, 'Dockerfile'), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('ENV '))
        .flatMap((line) => line.slice(4).trim().split(/\s+/))
        .map((pair) => pair.split('=') as [string, string]),
    );
    const image = loadConfig({ env: dockerEnv });
    expect([image.api.host, image.api.port, image.api.healthHost, image.api.healthPort]).toEqual(['0.0.0.0', 6060, '0.0.0.0', 6061]);
    const clairV2 = loadConfig({ file: fixture('clair-v2.yaml'), env: dockerEnv });
    expect([clairV2.api.host, clairV2.api.healthHost]).toEqual(['0.0.0.0', '0.0.0.0']);

    const compose = parseYaml(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as {
      'x-tarsier': { environment: Record<string, string> };
    };
    const service = loadConfig({ env: compose['x-tarsier'].environment });
    expect([service.api.host, service.api.port, service.api.healthHost, service.api.healthPort]).toEqual([
      '0.0.0.0',
      6060,
      '0.0.0.0',
      6061,
    ]);
  });
});

describe('Tarsier keys', () => {
  it('maps every Tarsier key', () => {
    const file = fixture('tarsier-all-keys.yaml');
    const cfg = loadConfig({ file });
    expect(cfg).toEqual({
      api: {
        host: '::1',
        port: 7070,
        healthHost: 'localhost',
        healthPort: 7071,
        timeoutMs: 90_000,
        bodyTimeoutMs: 45_000,
        headerTimeoutMs: 20_000,
        idleTimeoutMs: 120_000,
        uploadIdleTimeoutMs: 10_000,
        grpcPort: 7072,
        paginationKey: KEY_BYTES,
        v1Revision: 'A',
        localRoots: [path.join(fixtures, 'layers'), '/srv/tarsier/layers'],
        auth: {
          tokens: ['ci-token-1', 'dashboard-token-2'],
          psk: Buffer.from('0123456789abcdef0123456789abcdef'),
          requireExp: true,
          sessionIdleMs: 15 * 60_000,
          sessionLifetimeMs: 4 * 3_600_000,
        },
        tls: {
          certFile: path.join(fixtures, 'tls/server.pem'),
          keyFile: path.join(fixtures, 'tls/server-key.pem'),
          caFile: '/etc/tarsier/clients-ca.pem',
        },
      },
      database: {
        connection: {
          host: '/var/run/postgresql',
          port: 5433,
          user: 'tarsier',
          password: "p@ss w'rd",
          database: 'tarsier',
          ssl: true,
          connectionTimeoutMillis: 5000,
          application_name: 'tarsier-test',
        },
        maxConnections: 10,
        dataDir: path.join(fixtures, 'state/postgres'),
        dataDirIsDefault: false,
      },
      indexer: {
        downloadTimeoutMs: 300_000,
        maxLayerBytes: 2 * 1024 ** 3,
        maxExpandedBytes: 8 * 1024 ** 3,
        maxFileBytes: 64 * 1024 ** 2,
        denyPrivate: true,
        allowNetworks: ['10.20.0.0/16', 'fd00:1234::/32', '192.0.2.7'],
      },
      updater: {
        intervalMs: 0,
        maxDataAgeMs: 120 * 3_600_000,
        enabledUpdaters: ['debian', 'alpine', 'nvd'],
        sources: {
          ...DEFAULT_SOURCES,
          debian: { url: 'http://mirror.example.com/debian/security.json' },
          nvd: { url: 'https://mirror.example.com/nvd/' },
        },
      },
      notifier: {
        attempts: 7,
        renotifyIntervalMs: 1_800_000,
        endpoints: ['https://hooks.example.com/a', 'http://hooks.example.com:8080/b'],
        http: {
          serverName: 'hooks.example.com',
          caFile: path.join(fixtures, 'tls/hooks-ca.pem'),
          certFile: path.join(fixtures, 'tls/client.pem'),
          keyFile: path.join(fixtures, 'tls/client-key.pem'),
          proxy: 'http://proxy.example.com:3128',
        },
        secret: 'hmac-secret',
        retentionMs: 168 * 3_600_000,
        onEnrichment: true,
      },
      registries: {
        'registry.example.com:5000': { username: 'scanner', password: 's3cret', token: '', insecure: false },
        'ghcr.io': { username: '', password: '', token: 'ghp-token', insecure: false },
        'docker.io': { username: 'hubuser', password: 'hubpass', token: '', insecure: false },
        'localhost:5000': { username: '', password: '', token: '', insecure: true },
      },
      webhooks: { secret: 'Bearer webhook-secret' },
      images: { untaggedRetentionMs: 48 * 3_600_000, workers: 3, attempts: 4 },
      log: { level: 'debug' },
    } satisfies Config);
  });

  it('relative localroots resolve against the config file directory, or the cwd without a file', () => {
    const yaml = 'clair:\n  api:\n    localroots: [layers, ../shared/layers, /abs/dir/]\n';
    expect(parseConfig(yaml, {}, '/etc/tarsier/config.yaml').api.localRoots).toEqual([
      '/etc/tarsier/layers',
      '/etc/shared/layers',
      '/abs/dir',
    ]);
    expect(parseConfig(yaml).api.localRoots).toEqual([
      path.resolve(process.cwd(), 'layers'),
      path.resolve(process.cwd(), '../shared/layers'),
      '/abs/dir',
    ]);
  });

  it('notifier.http.endpoint comes first, then notifier.endpoints, without duplicates', () => {
    const cfg = parseConfig(
      'clair:\n  notifier:\n    endpoints: [http://b.example/x, https://a.example, http://b.example/x, http://c.example]\n    http:\n      endpoint: https://a.example/\n',
    );
    expect(cfg.notifier.endpoints).toEqual(['https://a.example/', 'http://b.example/x', 'http://c.example']);
  });

  it('a configured source merges over the defaults', () => {
    const cfg = parseConfig(
      'clair:\n  updater:\n    sources:\n      Alpine:\n        url: http://localhost:8080/secdb/\n      ubuntu: {}\n      debian: {url: "file:///srv/mirror/debian.json"}\n',
    );
    expect(cfg.updater.sources).toEqual({
      ...DEFAULT_SOURCES,
      alpine: { url: 'http://localhost:8080/secdb/' },
      debian: { url: 'file:///srv/mirror/debian.json' },
    });
  });

  it('the osv source reads the ecosystems listed, by OSV name or namespace in any case, each once', () => {
    const cfg = parseConfig('clair:\n  updater:\n    sources:\n      osv: {ecosystems: [PYPI, npm, crates.io, pypi]}\n');
    expect(cfg.updater.sources['osv']).toEqual({ url: DEFAULT_SOURCES['osv']!.url, ecosystems: ['PyPI', 'npm', 'crates.io'] });
    expect(errorOf(() => parseConfig('clair:\n  updater:\n    sources:\n      osv: {ecosystems: [cocoapods]}\n'))).toBe(
      'clair.updater.sources.osv.ecosystems[0]: must be an application ecosystem (npm, PyPI, Go, Maven, RubyGems, crates.io, NuGet, Packagist) (got "cocoapods") (line 4)',
    );
    expect(errorOf(() => parseConfig('clair:\n  updater:\n    sources:\n      debian: {ecosystems: [npm]}\n'))).toBe(
      'clair.updater.sources.debian.ecosystems: the debian source reads no application ecosystems (line 4)',
    );
  });

  it('log.level accepts Clair (logrus) spellings', () => {
    expect(parseConfig('clair:\n  log:\n    level: WARNING\n').log.level).toBe('warn');
    expect(parseConfig('clair:\n  log:\n    level: panic\n').log.level).toBe('fatal');
    expect(parseConfig('clair:\n  log:\n    level: silent\n').log.level).toBe('silent');
  });

  it('denyprivate accepts YAML 1.1 spellings (yes/no/on/off)', () => {
    expect(parseConfig('clair:\n  indexer:\n    denyprivate: yes\n').indexer.denyPrivate).toBe(true);
    expect(parseConfig('clair:\n  indexer:\n    denyprivate: "off"\n').indexer.denyPrivate).toBe(false);
  });

  it('maxopenconnections 0 means the default of 10', () => {
    expect(parseConfig('clair:\n  database:\n    options:\n      maxopenconnections: 0\n').database.maxConnections).toBe(10);
    expect(parseConfig('clair:\n  database:\n    options:\n      maxopenconnections: 3\n').database.maxConnections).toBe(3);
  });
});

describe('database.options.source', () => {
  const source = (s: string): unknown =>
    parseConfig(`clair:\n  database:\n    options:\n      source: ${JSON.stringify(s)}\n`).database.connection;

  it.each<[string, unknown]>([
    ['postgres://u:p@h:5433/db?sslmode=require', { connectionString: 'postgres://u:p@h:5433/db?sslmode=require' }],
    ['postgresql://h/db', { connectionString: 'postgresql://h/db' }],
    [
      "host=localhost port=5432 user=postgres password='a b' dbname=clair sslmode=disable statement_timeout=60000 connect_timeout=10 application_name=x",
      {
        host: 'localhost',
        port: 5432,
        user: 'postgres',
        password: 'a b',
        database: 'clair',
        ssl: false,
        statement_timeout: 60000,
        connectionTimeoutMillis: 10000,
        application_name: 'x',
      },
    ],
    ["password='it\\'s \\\\ here' user=''", { password: "it's \\ here", user: '' }],
    ['host = db   port= 6432 dbname =x', { host: 'db', port: 6432, database: 'x' }],
    ['password=a\\ b', { password: 'a b' }],
    ['hostaddr=10.0.0.5', { host: '10.0.0.5' }],
    ['sslmode=require', { ssl: { rejectUnauthorized: false } }],
    ['sslmode=verify-full', { ssl: true }],
    ['sslmode=prefer', { ssl: false }],
    [
      'lock_timeout=100 idle_in_transaction_session_timeout=200 fallback_application_name=f options=-cgeqo=off',
      {
        lock_timeout: 100,
        idle_in_transaction_session_timeout: 200,
        fallback_application_name: 'f',
        options: '-cgeqo=off',
      },
    ],
    [
      'keepalives=1 keepalives_idle=30 client_encoding=UTF8',
      { keepAlive: true, keepAliveInitialDelayMillis: 30000, client_encoding: 'UTF8' },
    ],
  ])('%s', (dsn, expected) => {
    expect(source(dsn)).toEqual(expected);
  });

  it('sslmode=verify-ca verifies the chain but not the host name', () => {
    const conn = source('sslmode=verify-ca') as { ssl: { rejectUnauthorized: boolean; checkServerIdentity: () => unknown } };
    expect(conn.ssl.rejectUnauthorized).toBe(true);
    expect(conn.ssl.checkServerIdentity()).toBeUndefined();
  });

  it('reads sslrootcert/sslcert/sslkey relative to the config file; the key stays hidden and pg accepts the frozen object', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tarsier-config-'));
    writeFileSync(path.join(dir, 'ca.pem'), 'CA');
    writeFileSync(path.join(dir, 'client.pem'), 'CERT');
    writeFileSync(path.join(dir, 'client.key'), 'KEY');
    const cfg = parseConfig(
      'clair:\n  database:\n    options:\n      source: sslmode=require sslrootcert=ca.pem sslcert=client.pem sslkey=client.key host=db\n',
      {},
      path.join(dir, 'config.yaml'),
    );
    const ssl = cfg.database.connection?.ssl as {
      ca: Buffer;
      cert: Buffer;
      key: Buffer;
      rejectUnauthorized: boolean;
      checkServerIdentity: unknown;
    };
    expect([ssl.ca.toString(), ssl.cert.toString(), ssl.key.toString()]).toEqual(['CA', 'CERT', 'KEY']);
    expect(ssl.rejectUnauthorized).toBe(true); // require + root cert = verify-ca (libpq)
    expect(typeof ssl.checkServerIdentity).toBe('function');
    expect(Object.keys(ssl)).not.toContain('key');
    expect(JSON.stringify(cfg.database.connection)).not.toContain('KEY');
    const conn = cfg.database.connection ?? {};
    expect(() => new pg.Client(conn)).not.toThrow();
    expect(() => new pg.Pool(conn)).not.toThrow();
  });

  it.each([
    [
      'host=h bogus=1',
      'clair.database.options.source: unknown connection keyword "bogus" (known: host, hostaddr, port, dbname, user, password, sslmode, sslrootcert, sslcert, sslkey, connect_timeout, application_name, fallback_application_name, options, client_encoding, keepalives, keepalives_idle, statement_timeout, lock_timeout, idle_in_transaction_session_timeout) (line 4)',
    ],
    ["password='open", 'clair.database.options.source: unterminated quoted value for password (line 4)'],
    ['host', 'clair.database.options.source: must be a PostgreSQL URL or "keyword=value" pairs (missing "=" after "host") (line 4)'],
    ['port=abc', 'clair.database.options.source: port must be an integer between 1 and 65535 (got "abc") (line 4)'],
    [
      'sslmode=maybe',
      'clair.database.options.source: sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full (got "maybe") (line 4)',
    ],
    ['sslrootcert=/nonexistent/ca.pem', 'clair.database.options.source: sslrootcert: cannot read "/nonexistent/ca.pem" (ENOENT) (line 4)'],
  ])('%s → error naming the key', (dsn, message) => {
    expect(errorOf(() => source(dsn))).toBe(message);
  });
});

describe('environment overrides', () => {
  const file = fixture('tarsier-all-keys.yaml');

  it('beat the file', () => {
    const cfg = loadConfig({
      file,
      env: {
        DATABASE_URL: 'postgres://env@envhost/envdb',
        TARSIER_API_PORT: '9090',
        TARSIER_HEALTH_PORT: '0',
        TARSIER_LOG_LEVEL: 'trace',
        TARSIER_DATA_DIR: '/var/lib/tarsier/pg',
      },
    });
    expect(cfg.database.connection).toEqual({ connectionString: 'postgres://env@envhost/envdb' });
    expect([cfg.api.host, cfg.api.port]).toEqual(['::1', 9090]);
    expect([cfg.api.healthHost, cfg.api.healthPort]).toEqual(['localhost', 0]);
    expect(cfg.log.level).toBe('trace');
    expect(cfg.database.dataDir).toBe('/var/lib/tarsier/pg');
  });

  it('TARSIER_API_ADDR and TARSIER_HEALTH_ADDR: an address, or a host alone that keeps the configured port', () => {
    const cfg = loadConfig({ file, env: { TARSIER_API_ADDR: '0.0.0.0', TARSIER_HEALTH_ADDR: '[::]:9091' } });
    expect([cfg.api.host, cfg.api.port, cfg.api.healthHost, cfg.api.healthPort]).toEqual(['0.0.0.0', 7070, '::', 9091]);
    const hosts = (env: Record<string, string>) => {
      const c = loadConfig({ env });
      return [c.api.host, c.api.port, c.api.healthHost, c.api.healthPort];
    };
    expect(hosts({ TARSIER_API_ADDR: 'tarsier.internal', TARSIER_HEALTH_ADDR: '::' })).toEqual(['tarsier.internal', 6060, '::', 6061]);
    // TARSIER_API_PORT still has the last word on the port.
    expect(hosts({ TARSIER_API_ADDR: '10.1.2.3:7000', TARSIER_API_PORT: '7001' })).toEqual(['10.1.2.3', 7001, '127.0.0.1', 6061]);
    expect(errorOf(() => loadConfig({ env: { TARSIER_API_ADDR: '6060' } }))).toBe(
      'TARSIER_API_ADDR: must be a "host:port" address such as "0.0.0.0:6060", ":6060" or "[::1]:6060", or a host alone such as "0.0.0.0" (the port is then the configured one) (got "6060")',
    );
  });

  it('empty strings count as unset', () => {
    const cfg = loadConfig({
      file,
      env: { DATABASE_URL: '', TARSIER_API_PORT: '', TARSIER_HEALTH_PORT: '', TARSIER_LOG_LEVEL: '', TARSIER_DATA_DIR: '' },
    });
    expect(cfg).toEqual(loadConfig({ file }));
  });

  it('a relative TARSIER_DATA_DIR resolves against the cwd', () => {
    expect(loadConfig({ env: { TARSIER_DATA_DIR: 'tmp/pg' } }).database.dataDir).toBe(path.resolve(process.cwd(), 'tmp/pg'));
  });

  it.each([
    [{ TARSIER_API_PORT: 'abc' }, 'TARSIER_API_PORT: must be an integer between 0 and 65535 (got "abc")'],
    [{ TARSIER_HEALTH_PORT: '70000' }, 'TARSIER_HEALTH_PORT: must be an integer between 0 and 65535 (got "70000")'],
    [{ TARSIER_LOG_LEVEL: 'loud' }, 'TARSIER_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
    [{ DATABASE_URL: 'host=localhost' }, 'DATABASE_URL: must be a postgres:// or postgresql:// URL (got a value of 14 characters)'],
    [{ TARSIER_CONFIG: '/nonexistent/tarsier.yaml' }, 'TARSIER_CONFIG: cannot read config file "/nonexistent/tarsier.yaml" (ENOENT)'],
  ])('invalid %o → error naming the variable', (env, message) => {
    expect(errorOf(() => loadConfig({ env }))).toBe(message);
  });

  it('an unreadable --config file names --config', () => {
    expect(errorOf(() => loadConfig({ file: '/nonexistent/c.yaml' }))).toBe(
      '--config: cannot read config file "/nonexistent/c.yaml" (ENOENT)',
    );
  });
});

describe('errors name the key', () => {
  const UPDATERS = 'debian, ubuntu, alpine, wolfi, rhel, rhel-vex, oracle, amzn, suse, photon, azurelinux, osv, nvd, epss, kev';
  it.each([
    [
      'clair:\n  api:\n    prot: 6060\n',
      'clair.api.prot: unknown key (known keys under clair.api: addr, auth, bodytimeout, cafile, certfile, grpcport, headertimeout, healthaddr, healthport, idletimeout, keyfile, localroots, paginationkey, port, servername, timeout, uploadidletimeout, v1revision) (line 3)',
    ],
    [
      'clair:\n  notifier:\n    http:\n      endpiont: http://x\n',
      'clair.notifier.http.endpiont: unknown key (known keys under clair.notifier.http: cafile, certfile, endpoint, keyfile, proxy, servername) (line 4)',
    ],
    [
      'clair:\n  databse: {}\n',
      'clair.databse: unknown key (known keys under clair: api, database, images, indexer, log, notifier, registries, updater, webhooks, worker) (line 2)',
    ],
    [
      'clair:\n  notifier:\n    stomp:\n      broker: x\n',
      'clair.notifier.stomp.broker: unknown key (known keys under clair.notifier.stomp: brokers, cafile, certfile, destination, failoverretrydelay, keyfile) (line 4)',
    ],
    ['clair:\n  api:\n    port: abc\n', 'clair.api.port: must be an integer between 0 and 65535 (got "abc") (line 3)'],
    ['clair:\n  api:\n    healthport: 65536\n', 'clair.api.healthport: must be an integer between 0 and 65535 (got 65536) (line 3)'],
    ['clair:\n  api:\n    port: 60.5\n', 'clair.api.port: must be an integer between 0 and 65535 (got 60.5) (line 3)'],
    [
      'clair:\n  api:\n    addr: "0.0.0.0"\n',
      'clair.api.addr: must be a "host:port" address such as "0.0.0.0:6060", ":6060" or "[::1]:6060" (got "0.0.0.0") (line 3)',
    ],
    [
      'clair:\n  api:\n    healthaddr: "[nothost]:1"\n',
      'clair.api.healthaddr: must be a "host:port" address such as "0.0.0.0:6060", ":6060" or "[::1]:6060" (got "[nothost]:1") (line 3)',
    ],
    [
      'clair:\n  api:\n    port: 6060\n    addr: ":6060"\n',
      'clair.api.addr: give one of clair.api.port (Clair v2) or clair.api.addr (Clair v3), not both (line 4)',
    ],
    [
      'clair:\n  api:\n    healthport: 6061\n    healthaddr: ":6061"\n',
      'clair.api.healthaddr: give one of clair.api.healthport (Clair v2) or clair.api.healthaddr (Clair v3), not both (line 4)',
    ],
    [
      'clair:\n  api:\n    timeout: 15 minutes\n',
      'clair.api.timeout: must be a duration >= 0 such as "900s", "2h" or "1h30m" (got "15 minutes") (line 3)',
    ],
    ['clair:\n  api:\n    timeout: 900\n', 'clair.api.timeout: must be a duration >= 0 such as "900s", "2h" or "1h30m" (got 900) (line 3)'],
    [
      'clair:\n  updater:\n    interval: -1h\n',
      'clair.updater.interval: must be a duration >= 0 such as "900s", "2h" or "1h30m" (got "-1h") (line 3)',
    ],
    [
      'clair:\n  notifier:\n    retention: 30d\n',
      'clair.notifier.retention: must be a duration >= 0 such as "900s", "2h" or "1h30m" (got "30d") (line 3)',
    ],
    [
      'clair:\n  indexer:\n    maxlayerbytes: 10 gigs\n',
      'clair.indexer.maxlayerbytes: must be a size > 0 such as "200MiB", "10GiB" or a number of bytes (got "10 gigs") (line 3)',
    ],
    [
      'clair:\n  indexer:\n    maxfilebytes: 0\n',
      'clair.indexer.maxfilebytes: must be a size > 0 such as "200MiB", "10GiB" or a number of bytes (got 0) (line 3)',
    ],
    ['clair:\n  indexer:\n    denyprivate: maybe\n', 'clair.indexer.denyprivate: must be true or false (got "maybe") (line 3)'],
    [
      'clair:\n  indexer:\n    allownetworks: [10.0.0.0/33]\n',
      'clair.indexer.allownetworks[0]: must be a network in CIDR form such as "10.20.0.0/16" or "fd00::/8", or an IP address (got "10.0.0.0/33") (line 3)',
    ],
    [
      'clair:\n  indexer:\n    allownetworks: [registry.internal]\n',
      'clair.indexer.allownetworks[0]: must be a network in CIDR form such as "10.20.0.0/16" or "fd00::/8", or an IP address (got "registry.internal") (line 3)',
    ],
    ['clair:\n  api:\n    v1revision: C\n', 'clair.api.v1revision: must be one of A, B (got "C") (line 3)'],
    [
      'clair:\n  api:\n    paginationkey: c2hvcnQ=\n',
      'clair.api.paginationkey: must be 32 bytes, base64 or 64 hex characters (got a value of 8 characters) (line 3)',
    ],
    [
      'clair:\n  database:\n    options:\n      paginationkey: "not base64!"\n',
      'clair.database.options.paginationkey: must be 32 bytes, base64 or 64 hex characters (got a value of 11 characters) (line 4)',
    ],
    [
      `clair:\n  api:\n    paginationkey: ${KEY_HEX}\n  database:\n    options:\n      paginationkey: ${KEY_HEX}\n`,
      'clair.database.options.paginationkey: give one of clair.api.paginationkey (Clair v2) or clair.database.options.paginationkey (Clair v3), not both (line 6)',
    ],
    [
      'clair:\n  api:\n    auth:\n      psk: c2VjcmV0\n',
      'clair.api.auth.psk: must be base64 for a key of at least 32 bytes (got a value of 8 characters) (line 4)',
    ],
    [
      'clair:\n  updater:\n    enabledupdaters: [debian, debain]\n',
      `clair.updater.enabledupdaters[1]: unknown updater "debain" (valid: ${UPDATERS}) (line 3)`,
    ],
    [
      'clair:\n  updater:\n    enabledupdaters: debian\n',
      'clair.updater.enabledupdaters: must be a list of strings (got "debian") (line 3)',
    ],
    [
      'clair:\n  updater:\n    sources:\n      sles: {url: "http://x"}\n',
      `clair.updater.sources.sles: unknown updater "sles" (valid: ${UPDATERS}) (line 4)`,
    ],
    [
      'clair:\n  updater:\n    sources:\n      debian: {uri: "http://x"}\n',
      'clair.updater.sources.debian.uri: unknown key (known keys under clair.updater.sources.debian: ecosystems, url) (line 4)',
    ],
    [
      'clair:\n  updater:\n    sources:\n      debian: {url: "ftp://x"}\n',
      'clair.updater.sources.debian.url: must be an http://, https:// or file:// URL (got "ftp://x") (line 4)',
    ],
    [
      'clair:\n  notifier:\n    endpoints:\n      - http://ok.example\n      - file:///tmp/x\n',
      'clair.notifier.endpoints[1]: must be an http:// or https:// URL (got "file:///tmp/x") (line 5)',
    ],
    [
      'clair:\n  notifier:\n    http:\n      endpoint: hooks.example.com/x\n',
      'clair.notifier.http.endpoint: must be an http:// or https:// URL (got "hooks.example.com/x") (line 4)',
    ],
    ['clair:\n  notifier:\n    attempts: 0\n', 'clair.notifier.attempts: must be an integer >= 1 (got 0) (line 3)'],
    ['clair:\n  database:\n    type: mysql\n', 'clair.database.type: must be one of pgsql (got "mysql") (line 3)'],
    [
      'clair:\n  database:\n    options:\n      maxopenconnections: -1\n',
      'clair.database.options.maxopenconnections: must be an integer >= 0 (got -1) (line 4)',
    ],
    ['clair:\n  api:\n    certfile: /c.pem\n', 'clair.api.keyfile: must be set when clair.api.certfile is set'],
    [
      'clair:\n  api:\n    cafile: /ca.pem\n',
      'clair.api.cafile: needs clair.api.certfile and clair.api.keyfile (the CA verifies client certificates of the TLS server) (line 3)',
    ],
    [
      'clair:\n  notifier:\n    http:\n      keyfile: /k.pem\n',
      'clair.notifier.http.certfile: must be set when clair.notifier.http.keyfile is set',
    ],
    [
      'clair:\n  log:\n    level: verbose\n',
      'clair.log.level: must be one of fatal, error, warn, info, debug, trace, silent (got "verbose") (line 3)',
    ],
    ['clair:\n  api:\n    localroots: [/ok, ""]\n', 'clair.api.localroots[1]: must be a file system path (got "") (line 3)'],
    ['clair:\n  api: 6060\n', 'clair.api: must be a mapping (got 6060) (line 2)'],
    [
      'clair:\n  api:\n    Port: 1\n    port: 2\n',
      'clair.api.port: given twice (as "Port" and "port"; keys are case-insensitive) (line 4)',
    ],
    ['api:\n  port: 6060\n', 'clair: missing top-level key in config (Tarsier and Clair put every setting under "clair:"; found "api")'],
    ['clair: {}\nlogging: {}\n', 'logging: unknown top-level key in config (every setting goes under "clair:")'],
    ['- clair\n', 'config: must be a mapping with the top-level key "clair" (got a list)'],
    [
      'clair:\n  api:\n    port: 1\n   bad: [\n',
      'config: invalid YAML: All mapping items must start at the same column at line 4, column 1',
    ],
  ])('%j', (yaml, message) => {
    expect(errorOf(() => parseConfig(yaml))).toBe(message);
  });

  it('names the file and line when the config came from a file', () => {
    expect(errorOf(() => parseConfig('clair:\n  api:\n    port: x\n', {}, '/etc/tarsier/config.yaml'))).toBe(
      'clair.api.port: must be an integer between 0 and 65535 (got "x") (/etc/tarsier/config.yaml:3)',
    );
  });

  it('never echoes secrets', () => {
    const secret = 'postgres://user:hunter2@db';
    const message = errorOf(() => loadConfig({ env: { DATABASE_URL: secret.replace('postgres', 'mysql') } }));
    expect(message).not.toContain('hunter2');
    expect(errorOf(() => parseConfig('clair:\n  api:\n    auth:\n      tokens: [good, [hunter2]]\n'))).toBe(
      'clair.api.auth.tokens[1]: must be a string (got a list) (line 4)',
    );
  });

  it('the error carries the key', () => {
    try {
      parseConfig('clair:\n  api:\n    port: x\n');
      expect.unreachable();
    } catch (e) {
      expect((e as ConfigError).key).toBe('clair.api.port');
    }
  });
});

describe('the config object is deeply frozen', () => {
  const load = (): Config => loadConfig({ file: fixture('tarsier-all-keys.yaml') });

  it.each<[string, (cfg: Config) => void]>([
    ['top level', (cfg) => ((cfg as { api: unknown }).api = {})],
    ['api.port', (cfg) => ((cfg.api as { port: number }).port = 1)],
    ['api.auth.tokens (push)', (cfg) => (cfg.api.auth.tokens as string[]).push('x')],
    ['api.localRoots[0]', (cfg) => ((cfg.api.localRoots as string[])[0] = '/')],
    ['api.tls.certFile', (cfg) => ((cfg.api.tls as { certFile: string }).certFile = '')],
    ['database.connection.host', (cfg) => ((cfg.database.connection as { host: string }).host = 'evil')],
    ['updater.enabledUpdaters[0]', (cfg) => ((cfg.updater.enabledUpdaters as string[])[0] = 'evil')],
    ['updater.sources.debian.url', (cfg) => ((cfg.updater.sources.debian as { url: string }).url = 'http://evil')],
    ['updater.sources (new entry)', (cfg) => ((cfg.updater.sources as Record<string, { url: string }>).extra = { url: 'x' })],
    ['notifier.endpoints (push)', (cfg) => (cfg.notifier.endpoints as string[]).push('http://evil')],
    ['notifier.http.proxy', (cfg) => ((cfg.notifier.http as { proxy: string }).proxy = '')],
    ['log.level', (cfg) => ((cfg.log as { level: string }).level = 'trace')],
  ])('assigning %s throws and changes nothing', (_, assign) => {
    const cfg = load();
    expect(() => assign(cfg)).toThrow(/read only|not extensible/);
    expect(cfg).toEqual(load());
  });

  it('defaults are frozen too and not shared between results', () => {
    const a = loadConfig({});
    expect(Object.isFrozen(a.updater.enabledUpdaters)).toBe(true);
    expect(Object.isFrozen(a.updater.sources.nvd)).toBe(true);
    expect(a.updater.enabledUpdaters).not.toBe(loadConfig({}).updater.enabledUpdaters);
  });
});

describe('parseDuration', () => {
  it.each<[string, number]>([
    ['0', 0],
    ['-0', 0],
    ['900s', 900_000],
    ['2h', 7_200_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    ['15m', 900_000],
    ['720h', 2_592_000_000],
    ['1h1m1s1ms', 3_661_001],
    ['.5s', 500],
    ['1.s', 1000],
    ['0.001s', 1],
    ['1500us', 2],
    ['1µs', 1],
    ['1ns', 1],
    ['1000000ns', 1],
    ['0s', 0],
    ['-1.5s', -1500],
    ['+2m', 120_000],
    [' 10s ', 10_000],
  ])('%j → %d ms', (s, ms) => {
    expect(parseDuration(s)).toBe(ms);
  });

  it.each(['', 'abc', '900', '1d', '1h 30m', 'h', '1.2.3s', '--1s', '1e3s', 's1', '1H', '99999999999999999999h'])('%j throws', (s) => {
    expect(() => parseDuration(s)).toThrow(/invalid duration/);
  });
});

describe('parseByteSize', () => {
  it.each<[string | number, number]>([
    ['10GiB', 10 * 1024 ** 3],
    ['200MiB', 200 * 1024 ** 2],
    ['512KiB', 512 * 1024],
    ['1TiB', 1024 ** 4],
    ['1024', 1024],
    [1024, 1024],
    [0, 0],
    ['100B', 100],
    ['100b', 100],
    ['1.5GiB', 1.5 * 1024 ** 3],
    ['2 MiB', 2 * 1024 ** 2],
    ['64mib', 64 * 1024 ** 2],
    ['1Gi', 1024 ** 3],
    ['1kB', 1000],
    ['5MB', 5_000_000],
    ['1GB', 1_000_000_000],
    ['0.5KiB', 512],
  ])('%j → %d bytes', (s, n) => {
    expect(parseByteSize(s)).toBe(n);
  });

  it.each<string | number>([
    '',
    'GiB',
    '-1MiB',
    '10 gigs',
    '1XiB',
    '1.2.3MiB',
    'ten',
    -1,
    1.5,
    Number.NaN,
    Infinity,
    '1e3',
    '99999999999TiB',
  ])('%j throws', (s) => {
    expect(() => parseByteSize(s)).toThrow(/invalid byte size/);
  });
});

describe('docs/configuration.md', () => {
  const docs = readFileSync(path.join(here, '..', 'docs', 'configuration.md'), 'utf8');
  const keysOf = (value: unknown, prefix: string): string[] =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.entries(value).flatMap(([k, v]) => {
          const key = prefix === '' ? k : `${prefix}.${k}`;
          const named = /^updater\.sources\.[a-z]+$/.test(key)
            ? 'updater.sources.<name>'
            : prefix === 'registries'
              ? 'registries.<host>'
              : key;
          const children = keysOf(v, named);
          return /^(worker|notifier\.stomp)$/.test(named) || children.length === 0 ? [named, ...children] : children;
        })
      : [];

  it.each(['clair-v2.yaml', 'clair-v3.yaml', 'clair-v3-dev.yaml', 'tarsier-all-keys.yaml'])('documents every key of %s', (name) => {
    const root = parseYaml(readFixture(name)) as { clair: unknown };
    const keys = [...new Set(keysOf(root.clair, ''))];
    expect(keys.length).toBeGreaterThan(10);
    for (const key of keys) expect(docs, key).toContain(`\`${key}\``);
  });

  it.each([
    'DATABASE_URL',
    'TARSIER_CONFIG',
    'TARSIER_API_ADDR',
    'TARSIER_API_PORT',
    'TARSIER_HEALTH_ADDR',
    'TARSIER_HEALTH_PORT',
    'TARSIER_LOG_LEVEL',
    'TARSIER_DATA_DIR',
  ])('documents %s', (name) => {
    expect(docs).toContain(`\`${name}\``);
  });
});
