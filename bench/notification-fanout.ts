/**
 * Notification fan-out: one vulnerability affecting 100,000 layers. Time from the update (the
 * POST that changes the vulnerability) to its notification being readable, and time to page
 * through all its layers at limit=1000, against a running server.
 */
import pg from 'pg';
import { median, provenance, writeBenchmarkSection } from './lib.js';
import { benchDatabase, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- notification-fanout';
const LAYERS = 100_000;
const VERSIONS = 20;
const RUNS = 3;

/**
 * 100,000 base layers (written with SQL: this measures fan-out, not indexing), each adding one of
 * 20 versions of openssl in debian:12, plus a child per 10 bases that introduces nothing.
 */
async function seed(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`
    INSERT INTO namespace (name, version_format) VALUES ('debian:12', 'dpkg');
    INSERT INTO feature (namespace_id, name) SELECT id, 'openssl' FROM namespace;
    INSERT INTO feature_version (feature_id, version) SELECT f.id, '3.0.' || g || '-1' FROM feature f, generate_series(1, ${VERSIONS}) g;
    INSERT INTO layer_scan (key, indexed_by_version, namespace) SELECT 'v1/layer-' || g, 1, 'debian:12' FROM generate_series(1, ${LAYERS}) g;
    INSERT INTO layer (name, namespace_id, scan_id, indexed_by_version)
      SELECT 'layer-' || s.id, (SELECT id FROM namespace), s.id, 1 FROM layer_scan s ORDER BY s.id;
    INSERT INTO layer_diff (layer_id, feature_version_id, modification)
      SELECT l.id, (SELECT id FROM feature_version ORDER BY id OFFSET (l.id % ${VERSIONS}) LIMIT 1), 'add' FROM layer l;
    ANALYZE;`);
  await client.end();
}

export async function run(): Promise<void> {
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, '  updater:\n    interval: 0');
  const base = `http://127.0.0.1:${server.apiPort}`;
  try {
    await seed(database.url);
    const readable: number[] = [];
    const paging: number[] = [];
    let layersSeen = 0;
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      // Each run changes the fix: a new version of the vulnerability and a notification naming both.
      const res = await fetch(`${base}/v1/namespaces/debian%3A12/vulnerabilities`, {
        method: 'POST',
        body: JSON.stringify({
          Vulnerability: { Name: 'CVE-2099-0001', Severity: 'High', FixedIn: [{ Name: 'openssl', Version: `3.0.${99 + run}-1` }] },
        }),
      });
      if (res.status !== 201) throw new Error(`POST answered ${res.status}`);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const name = (await client.query<{ name: string }>('SELECT name FROM notification ORDER BY id DESC LIMIT 1')).rows[0]!.name;
      await client.end();
      const first = (await (await fetch(`${base}/v1/notifications/${name}?limit=1000`)).json()) as {
        Notification: { NextPage?: string; New: { LayersIntroducingVulnerability: string[] } };
      };
      readable.push(performance.now() - started);
      const pagingStarted = performance.now();
      let seen = first.Notification.New.LayersIntroducingVulnerability.length;
      let next = first.Notification.NextPage;
      while (next) {
        const page = (await (
          await fetch(`${base}/v1/notifications/${name}?limit=1000&page=${encodeURIComponent(next)}`)
        ).json()) as typeof first;
        seen += page.Notification.New.LayersIntroducingVulnerability.length;
        next = page.Notification.NextPage;
      }
      paging.push(performance.now() - pagingStarted + readable[readable.length - 1]!);
      layersSeen = seen;
    }
    if (layersSeen !== LAYERS) throw new Error(`paged ${layersSeen} layers, expected ${LAYERS}`);
    const body = [
      ...provenance(COMMAND),
      '',
      `Data: ${LAYERS.toLocaleString('en')} layers in debian:12, each introducing one of ${VERSIONS} openssl versions (seeded with SQL), all affected by one vulnerability. Each run POSTs a new fixed version of that vulnerability to a running server (node dist/src/cli.js): the change, its affects links and its notification are written in one transaction. "Readable" is from the start of the POST until the first page of the notification (limit=1000, Old and New sides) has arrived; "all pages" adds paging through every page at limit=1000 (${LAYERS / 1000} pages of up to 1,000 layers per side). Median of ${RUNS} runs.`,
      '',
      '| Measure | Median | Runs |',
      '|---|---|---|',
      `| Update → notification readable | ${(median(readable) / 1000).toFixed(2)} s | ${readable.map((r) => (r / 1000).toFixed(2)).join(', ')} |`,
      `| Update → all ${LAYERS.toLocaleString('en')} layers paged | ${(median(paging) / 1000).toFixed(2)} s | ${paging.map((r) => (r / 1000).toFixed(2)).join(', ')} |`,
    ].join('\n');
    await writeBenchmarkSection('Notification fan-out', body);
  } finally {
    await server.stop();
    await database.close();
  }
}
