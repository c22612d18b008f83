/**
 * Which part of src/ may import which. Each module (a folder under src/, or a file at its top) sits
 * in one layer; a file imports from its own module or from a lower layer, never from a higher one
 * and never from another module of its own layer. The layers are the directions the code follows
 * today: the model below everything; the store and the ecosystems side by side (the store imports
 * nothing from ecosystems/, ecosystems/ nothing from updater/ or store/, both read the model); the
 * indexer below the updater (indexing and matching stay apart); the registry client on the
 * indexer's fetch; images on both; the HTTP/gRPC API above them; the CI scanner, which calls the
 * API as a client and runs the same services standalone, above the API; the entry points on top.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Lowest first. A folder is named with its trailing slash, a top-level file with its .ts. */
const LAYERS: readonly (readonly string[])[] = [
  // zip.ts reads archives entry by entry, for the sources (OSV's archives) and the listers (Java archives).
  ['model/', 'errors.ts', 'version.ts', 'duration.ts', 'logger.ts', 'metrics.ts', 'single-pass.ts', 'zip.ts'],
  // outbound/ builds every HTTP client dispatcher (address policy, TLS, proxy, timeouts, redirects):
  // below the indexer, registry, config, updater, notifier and scanner that use it.
  ['store/', 'ecosystems/', 'decompress.ts', 'outbound/'],
  // sbom/ reads SBOM documents into packages by the catalog's rows (ecosystems/): pure, no store, so
  // the API, the images service and the CLI above can all read a document the same way.
  ['sbom/'],
  // Read models and operations over the store: coverage, the v1 vulnerability database, matches
  // recomputed, layer reports assembled and cached (written by the API that serves them).
  ['coverage.ts', 'vulndb.ts', 'rematch.ts', 'reports/'],
  ['indexer/'],
  ['registry/'],
  ['config.ts'],
  ['images/', 'updater/', 'notifier/'],
  // settings.ts turns the Config into each part's settings, for the entry points and services.ts;
  // layer-scanning.ts builds the layer scans for services.ts and a standalone scan alike.
  ['database.ts', 'settings.ts', 'layer-scanning.ts'],
  ['api/'],
  // The services a process builds from its configuration, for the server and the standalone scanner.
  ['services.ts'],
  ['scanner/'],
  ['app.ts'],
  ['server.ts'],
  ['cli.ts'],
];

/**
 * Imports that go against the layers, each with why it is tolerated. Only these exact file → file
 * imports are; any other import between the same modules still fails. None today: the indexer's
 * type import of the Config, which closed a folder cycle, went when its settings moved to
 * settings.ts.
 */
const EXCEPTIONS: ReadonlyArray<{ from: string; to: string; why: string }> = [];

/** The module a path relative to src/ belongs to: its top folder with a slash, or the file itself. */
function moduleOf(path: string): string {
  const slash = path.indexOf('/');
  return slash === -1 ? path : path.slice(0, slash + 1);
}

/** Every relative import of each TypeScript file under src/, as paths relative to src/ ending in .ts. */
function sourceImports(): Array<{ file: string; target: string }> {
  const found: Array<{ file: string; target: string }> = [];
  for (const entry of readdirSync(SRC, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = relative(SRC, join(entry.parentPath, m[1]!)).replace(/\.js$/, '.ts');
      found.push({ file: relative(SRC, path), target });
    }
  }
  return found;
}

const layerOf = new Map(LAYERS.flatMap((modules, rank) => modules.map((m) => [m, rank] as const)));
const imports = sourceImports();

describe('layering', () => {
  it('places every module of src/ in one layer', () => {
    const modules = new Set(imports.flatMap((i) => [moduleOf(i.file), moduleOf(i.target)]));
    for (const entry of readdirSync(SRC, { withFileTypes: true })) {
      if (entry.isDirectory()) modules.add(`${entry.name}/`);
      else if (entry.name.endsWith('.ts')) modules.add(entry.name);
    }
    expect([...modules].filter((m) => !layerOf.has(m)).sort()).toEqual([]);
    expect(LAYERS.flat().length).toBe(layerOf.size);
  });

  it('has no import into a higher layer or a sibling module, except the listed ones', () => {
    const wrong = imports
      .filter(({ file, target }) => {
        const from = moduleOf(file);
        const to = moduleOf(target);
        if (from === to) return false;
        if (layerOf.get(to)! < layerOf.get(from)!) return false;
        return !EXCEPTIONS.some((e) => e.from === file && e.to === target);
      })
      .map(({ file, target }) => `${file} → ${target}`);
    expect(wrong).toEqual([]);
  });

  it('lists only exceptions that still exist, each a type-only import', () => {
    for (const e of EXCEPTIONS) {
      expect(imports, `${e.from} → ${e.to}`).toContainEqual({ file: e.from, target: e.to });
      const specifier = relative(join(e.from, '..'), e.to).replace(/\.ts$/, '.js');
      const statements = [...readFileSync(join(SRC, e.from), 'utf8').matchAll(/^(?:import|export)\b[^;]*?from\s*'([^']+)'/gm)];
      const naming = statements.filter((m) => m[1]!.replace(/^\.\//, '') === specifier.replace(/^\.\//, ''));
      expect(naming.length, e.from).toBeGreaterThan(0);
      for (const [statement] of naming) expect(statement, e.why).toMatch(/^import type /);
    }
  });

  // The rules the style guide names, spelled out so a change of LAYERS cannot drop them silently.
  it.each([
    ['store/', 'ecosystems/'],
    ['store/', 'updater/'],
    ['store/', 'api/'],
    ['ecosystems/', 'updater/'],
    ['ecosystems/', 'store/'],
    ['ecosystems/', 'api/'],
    ['sbom/', 'store/'],
    ['indexer/', 'updater/'],
    ['indexer/', 'images/'],
    ['indexer/', 'registry/'],
    ['registry/', 'images/'],
    ['images/', 'api/'],
    ['images/', 'scanner/'],
    ['api/', 'scanner/'],
  ])('%s imports nothing from %s', (from, forbidden) => {
    const mine = imports.filter((i) => moduleOf(i.file) === from);
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.filter((i) => moduleOf(i.target) === forbidden)).toEqual([]);
  });
});
