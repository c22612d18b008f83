/**
 * npm run bench: runs every benchmark in turn; each writes its own section of docs/benchmarks.md.
 * `npm run bench -- NAME ...` runs only the named ones.
 */
import { run as appLayer } from './app-layer.js';
import { run as debianImport } from './debian-import.js';
import { run as epssImport } from './epss-import.js';
import { run as layerIndex } from './layer-index.js';
import { run as layerReport } from './layer-report.js';
import { run as notificationFanout } from './notification-fanout.js';
import { run as osvImport } from './osv-import.js';
import { run as scanArchive } from './scan-archive.js';
import { run as scanUpload } from './scan-upload.js';
import { run as soak } from './soak.js';
import { run as versionCompare } from './version-compare.js';
import { run as vulnerabilityWrite } from './vulnerability-write.js';

const BENCHMARKS: Record<string, () => Promise<void>> = {
  'version-compare': versionCompare,
  'layer-index': layerIndex,
  'app-layer': appLayer,
  'layer-report': layerReport,
  'debian-import': debianImport,
  'epss-import': epssImport,
  'osv-import': osvImport,
  'vulnerability-write': vulnerabilityWrite,
  'notification-fanout': notificationFanout,
  'scan-upload': scanUpload,
  'scan-archive': scanArchive,
  soak,
  'ui-pages': async () => (await import('./ui-pages.js')).run(),
  scale: async () => (await import('./scale.js')).run(),
};

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!Object.hasOwn(BENCHMARKS, name)) {
    process.stderr.write(`unknown benchmark ${name}; known: ${Object.keys(BENCHMARKS).join(', ')}\n`);
    process.exit(2);
  }
}
for (const [name, run] of Object.entries(BENCHMARKS)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  process.stdout.write(`benchmark ${name}\n`);
  await run();
}
