import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ApplicationPackage, LayerFiles } from '../../src/model/indexing.js';
import { composerLister } from '../../src/ecosystems/composer/lister.js';
import { expectedPackages } from './listed-packages.js';

/**
 * Real installed.json files (PROVENANCE.md), each beside `jq-packages.txt`: its packages as jq
 * read them when the fixture was taken, one `name version` a line, the name lower-cased:
 *   jq -r '(if type=="array" then . else .packages end)[] | "\(.name|ascii_downcase) \(.version)"'
 * The lister must find exactly those, field by field.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/composer/', import.meta.url));
const INSTALLED = 'vendor/composer/installed.json';

const layer = (entries: Record<string, string>): LayerFiles =>
  new Map(Object.entries(entries).map(([path, text]) => [path, Buffer.from(text)]));

function fixture(name: string, app: string): { files: LayerFiles; expected: ApplicationPackage[] } {
  const location = `${app}/${INSTALLED}`;
  const files = new Map([[location, readFileSync(`${FIXTURES}${name}/${INSTALLED}`)]]);
  return { files, expected: expectedPackages(`${FIXTURES}${name}/jq-packages.txt`, 'packagist', location) };
}

describe('composer lister on real installed.json files, against jq', () => {
  it.each([
    ['composer-1', 2],
    ['composer-2', 2],
    ['composer-2-slim', 3],
  ])('%s: every package, name, version and location', (name, count) => {
    const { files, expected } = fixture(name, 'var/www/html');
    const { packages, unreadable } = composerLister.list(files);
    expect(unreadable).toEqual([]);
    expect(expected).toHaveLength(count);
    expect(packages).toEqual(expected);
  });

  it('lists the development packages dev-package-names names (behat/mink in the Composer 2 file)', () => {
    const { files } = fixture('composer-2', 'app');
    const raw = JSON.parse(readFileSync(`${FIXTURES}composer-2/${INSTALLED}`, 'utf8')) as { 'dev-package-names': string[] };
    expect(raw['dev-package-names']).toEqual(['behat/mink']);
    expect(composerLister.list(files).packages.map((p) => p.name)).toContain('behat/mink');
  });
});

describe('composer lister', () => {
  it('wants installed.json under any vendor directory, and nothing else', () => {
    expect(composerLister.wants('vendor/composer/installed.json')).toBe(true);
    expect(composerLister.wants('var/www/html/vendor/composer/installed.json')).toBe(true);
    expect(composerLister.wants('srv/app/vendor/composer/installed.php')).toBe(false);
    expect(composerLister.wants('srv/app/composer.lock')).toBe(false);
    expect(composerLister.wants('srv/app/myvendor/composer/installed.json')).toBe(false);
    expect(composerLister.wants('srv/app/vendor/composer/installed.json.bak')).toBe(false);
  });

  it('lower-cases names as Packagist matches them, keeps the version as written, lists a duplicate once', () => {
    const files = layer({
      [INSTALLED]: JSON.stringify({
        packages: [
          { name: 'Symfony/HTTP-Kernel', version: 'v4.4.13' },
          { name: 'symfony/http-kernel', version: 'v4.4.13' },
          { name: 'guzzlehttp/guzzle', version: '6.5.5' },
          { name: 'acme/tool', version: 'dev-main' },
        ],
        dev: false,
        'dev-package-names': [],
      }),
    });
    expect(composerLister.list(files).packages.map((p) => `${p.name} ${p.version}`)).toEqual([
      'symfony/http-kernel v4.4.13',
      'guzzlehttp/guzzle 6.5.5',
      'acme/tool dev-main',
    ]);
  });

  it('reports broken entries and files, and still lists the rest', () => {
    const files = layer({
      'a/vendor/composer/installed.json': '{"packages": [',
      'b/vendor/composer/installed.json': '{"packages": {"x": 1}}',
      'c/vendor/composer/installed.json': JSON.stringify([
        { name: 'psr/log', version: '1.1.4' },
        { name: 'no/version' },
        { version: '1.0.0' },
        'psr/container',
        { name: 'bad/version', version: 'not a version' },
      ]),
      'd/vendor/composer/installed.json': '"packages"',
    });
    const { packages, unreadable } = composerLister.list(files);
    expect(packages).toEqual([{ ecosystem: 'packagist', name: 'psr/log', version: '1.1.4', location: 'c/vendor/composer/installed.json' }]);
    expect(unreadable.map((u) => u.location)).toEqual([
      'a/vendor/composer/installed.json',
      'b/vendor/composer/installed.json',
      'c/vendor/composer/installed.json',
      'c/vendor/composer/installed.json',
      'c/vendor/composer/installed.json',
      'c/vendor/composer/installed.json',
      'd/vendor/composer/installed.json',
    ]);
    expect(unreadable[0]?.why).toMatch(/^not JSON/);
    expect(unreadable[1]?.why).toMatch(/Composer 1.*Composer 2/);
    expect(unreadable.slice(2, 6).map((u) => u.why)).toEqual([
      'no/version: no version',
      'packages[2]: no name',
      'packages[3]: not a JSON object',
      'bad/version: version "not a version" is not a composer version',
    ]);
  });

  it('reads an empty install (Composer 2 writes one with no packages)', () => {
    expect(composerLister.list(layer({ [INSTALLED]: '{"packages": [], "dev": true, "dev-package-names": []}' }))).toEqual({
      packages: [],
      unreadable: [],
    });
  });
});
