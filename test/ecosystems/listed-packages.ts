import { readFileSync } from 'node:fs';
import type { ApplicationPackage } from '../../src/model/indexing.js';

/**
 * A fixture's expected packages, written when the fixture was taken by a reader other than the
 * lister (jq, Python's tomllib): one `name version` a line, in the manifest's order. As a lister
 * lists them for the manifest at location.
 */
export function expectedPackages(path: string, ecosystem: string, location: string): ApplicationPackage[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [name, version] = line.split(' ') as [string, string];
      return { ecosystem, name, version, location };
    });
}
