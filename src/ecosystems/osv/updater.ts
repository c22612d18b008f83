import { access, readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { directory, type StreamedPart, type Updater } from '../../model/updater.js';
import type { Vulnerability } from '../../model/vulnerability.js';
import { zipEntries } from '../../zip.js';
import { APPLICATION_ECOSYSTEMS, type ApplicationEcosystem } from '../catalog.js';
import { catalogEcosystem, parseOsvRecord, type OsvEcosystem } from './records.js';

/**
 * OSV.dev's advisories of application ecosystems. Upstream (and a mirror laid out as it) publishes
 * one archive per ecosystem, `<Ecosystem>/all.zip`, each a part of its own, complete for the
 * ecosystem's namespace. A local directory without those archives (a checkout of GitHub's advisory
 * database, of the Go vulnerability database) is one part: every `*.json` record below it, complete
 * for the chosen ecosystems. Either way records are read one at a time (StreamedPart): npm's archive
 * holds hundreds of thousands.
 */

/** Far above OSV's largest ecosystem (npm: about 220,000 records in 2026) and its largest record (a few MB). */
const LIMITS = { maxEntries: 5_000_000, maxEntryBytes: 64 * 1024 * 1024 };

const ARCHIVE = 'all.zip';

export const osvSource = {
  name: 'osv',
  kind: 'vulnerabilities',
  async parts(base, _fetchText, options) {
    const chosen = options.ecosystems
      ? APPLICATION_ECOSYSTEMS.filter((e) => options.ecosystems!.includes(e.osvName))
      : APPLICATION_ECOSYSTEMS;
    const root = directory(base);
    if (root.startsWith('file:') && !(await holdsArchives(root, chosen))) return [recordsDirectory(root, chosen)];
    return chosen.map((e) => archive(root, e));
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [osvSource];

function archive(root: string, ecosystem: ApplicationEcosystem): StreamedPart {
  const named = ecosystemsNamed([ecosystem]);
  return {
    key: ecosystem.osvName,
    urls: [`${root}${encodeURIComponent(ecosystem.osvName)}/${ARCHIVE}`],
    namespaces: [ecosystem.namespace],
    async *records([path]) {
      for await (const entry of zipEntries(path!, LIMITS)) {
        if (entry.name.endsWith('.json')) yield* recordsOf(entry.data, `${ecosystem.osvName}/${ARCHIVE}:${entry.name}`, named);
      }
    },
  };
}

function recordsDirectory(root: string, chosen: readonly ApplicationEcosystem[]): StreamedPart {
  const named = ecosystemsNamed(chosen);
  return {
    key: 'directory',
    urls: [root],
    namespaces: chosen.map((e) => e.namespace),
    async *records([path]) {
      const files = (await readdir(path!, { withFileTypes: true, recursive: true }))
        .filter((e) => e.isFile() && e.name.endsWith('.json'))
        .map((e) => join(e.parentPath, e.name))
        .sort();
      for (const file of files) {
        const where = relative(path!, file);
        if ((await stat(file)).size > LIMITS.maxEntryBytes)
          throw new Error(`${where} is larger than the ${LIMITS.maxEntryBytes} bytes read`);
        yield* recordsOf(await readFile(file), where, named);
      }
    },
  };
}

/** Whether a local mirror holds the archive of any chosen ecosystem. */
async function holdsArchives(root: string, chosen: readonly ApplicationEcosystem[]): Promise<boolean> {
  const present = await Promise.all(
    chosen.map((e) =>
      access(fileURLToPath(`${root}${encodeURIComponent(e.osvName)}/${ARCHIVE}`)).then(
        () => true,
        () => false,
      ),
    ),
  );
  return present.includes(true);
}

/** The parser's view of these ecosystems only: a record's packages of any other are left to their own part. */
function ecosystemsNamed(ecosystems: readonly ApplicationEcosystem[]): (osvName: string) => OsvEcosystem | undefined {
  const byName = new Map(ecosystems.map((e) => [e.osvName, catalogEcosystem(e.osvName)!]));
  return (osvName) => byName.get(osvName);
}

function recordsOf(text: Buffer, where: string, named: (osvName: string) => OsvEcosystem | undefined): Vulnerability[] {
  try {
    return parseOsvRecord(text, named);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`, { cause: err });
  }
}
