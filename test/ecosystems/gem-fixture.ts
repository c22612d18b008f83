import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApplicationPackage, LayerFiles } from '../../src/model/indexing.js';
import { gemspecLister } from '../../src/ecosystems/gem/lister.js';

/**
 * The recorded gem installation (test/fixtures/gem/record.sh) and RubyGems' reading of it, shared
 * by the gemspec lister's offline test and its live comparison with Ruby.
 */
export const GEM_FIXTURES = fileURLToPath(new URL('../fixtures/gem/', import.meta.url));
export const INSTALL = join(GEM_FIXTURES, 'debian-12');

/** Every file of the recorded installation, as layer paths. */
export function installFiles(): string[] {
  return readdirSync(INSTALL, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(INSTALL, join(entry.parentPath, entry.name)).split(sep).join('/'));
}

/** The installation as the archive walk would hand it over: only the files the lister wants. */
export function installLayer(): LayerFiles {
  return new Map(
    installFiles()
      .filter((path) => gemspecLister.wants(path))
      .map((path) => [path, readFileSync(join(INSTALL, path))]),
  );
}

/** `<path> <name> <version>` lines, as oracle.rb prints them, as the lister's packages. */
export function oraclePackages(lines: string): ApplicationPackage[] {
  return lines
    .trim()
    .split('\n')
    .map((line) => {
      const [location, name, version] = line.split(' ') as [string, string, string];
      return { ecosystem: 'rubygems', name, version, location };
    });
}
