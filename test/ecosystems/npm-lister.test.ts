import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ApplicationPackage, LayerFiles } from '../../src/model/indexing.js';
import { npmLister } from '../../src/ecosystems/npm/lister.js';

/**
 * A real npm install (test/fixtures/npm/record.sh; PROVENANCE.md says what and when), kept as its
 * package.json files, and npm's own view of it, `npm ls --all --json --long`, recorded at the same
 * time: the lister must find in the files exactly the packages npm finds.
 */
const TREE = fileURLToPath(new URL('../fixtures/npm/express-tree/', import.meta.url));
/** Where the project sits in the layer, as an application image would hold it. */
const APP = 'usr/src/app/';

/** One node of `npm ls --json --long`: `--long` adds the manifest's name (an alias's real name) and the node's folder. */
interface NpmLsNode {
  readonly name: string;
  readonly version: string;
  readonly path: string;
  readonly dependencies?: Readonly<Record<string, NpmLsNode>>;
}

const layer = (entries: Record<string, string>): LayerFiles =>
  new Map(Object.entries(entries).map(([path, text]) => [path, Buffer.from(text)]));
const manifest = (fields: Record<string, unknown>): string => JSON.stringify(fields);
const triple = (p: ApplicationPackage): string => `${p.name}@${p.version} ${p.location}`;

/** Every file of the recorded tree, as layer paths. */
function treeFiles(): string[] {
  return readdirSync(TREE, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => APP + relative(TREE, join(entry.parentPath, entry.name)).split(sep).join('/'));
}

/** The layer as the archive walk would hand it over: only the files the lister wants. */
function treeLayer(): LayerFiles {
  return new Map(
    treeFiles()
      .filter((path) => npmLister.wants(path))
      .map((path) => [path, readFileSync(join(TREE, path.slice(APP.length)))]),
  );
}

/**
 * npm's packages as lister triples. `npm ls --all` shows a package under every package that
 * depends on it, so a deduplicated package appears several times (without its own dependencies
 * after the first), each time with the same folder: a folder is one package. Its JSON keys a
 * dependency by the folder's name, which for an alias is the alias (`lodash-alias`), not the
 * package; `--long`'s `name` is the package's. The root is the project itself, not a dependency.
 */
function npmView(): Set<string> {
  const root = JSON.parse(readFileSync(join(TREE, 'npm-ls.json'), 'utf8')) as NpmLsNode;
  const found = new Set<string>();
  const visit = (node: NpmLsNode): void => {
    for (const dep of Object.values(node.dependencies ?? {})) {
      const folder = relative(root.path, dep.path).split(sep).join('/');
      found.add(`${dep.name}@${dep.version} ${APP}${folder}/package.json`);
      visit(dep);
    }
  };
  visit(root);
  return found;
}

describe('npm lister on a real install, against npm ls', () => {
  const files = treeLayer();
  const { packages, unreadable } = npmLister.list(files);
  const expected = npmView();

  it('finds exactly the packages npm ls finds, each at its folder', () => {
    expect(unreadable).toEqual([]);
    expect(expected.size).toBe(84);
    expect(new Set(packages.map(triple))).toEqual(expected);
    expect(packages).toHaveLength(expected.size);
    const names = (set: Iterable<string>) => new Set([...set].map((t) => t.split(' ')[0]));
    expect(names(packages.map(triple))).toEqual(names(expected));
    expect(names(expected).size).toBe(78);
  });

  it('lists each package from its own manifest', () => {
    for (const pkg of packages) {
      expect(pkg.ecosystem).toBe('npm');
      const json = JSON.parse(readFileSync(join(TREE, pkg.location.slice(APP.length)), 'utf8'));
      expect([json.name, json.version]).toEqual([pkg.name, pkg.version]);
    }
  });

  it('holds the nested copies, the alias and the scoped packages the install was chosen for', () => {
    const at = (folder: string) => packages.find((p) => p.location === `${APP}${folder}/package.json`);
    expect(at('node_modules/debug')?.version).toBe('4.3.1');
    for (const parent of ['express', 'body-parser', 'finalhandler', 'send']) {
      expect(at(`node_modules/${parent}/node_modules/debug`)?.version).toBe('2.6.9');
    }
    expect(at('node_modules/minimist')?.version).toBe('1.2.0');
    expect(at('node_modules/mkdirp/node_modules/minimist')?.version).toBe('0.0.8');
    expect(at('node_modules/lodash')).toMatchObject({ name: 'lodash', version: '4.17.15' });
    expect(at('node_modules/lodash-alias')).toMatchObject({ name: 'lodash', version: '4.17.20' });
    expect(at('node_modules/@babel/code-frame')).toMatchObject({ name: '@babel/code-frame', version: '7.0.0' });
  });

  it('wants no other file of the tree: not the project, the lockfiles, nor the manifests inside packages', () => {
    const unwanted = treeFiles().filter((path) => !npmLister.wants(path));
    expect(unwanted.filter((path) => !path.endsWith('/package.json')).sort()).toEqual(
      [`${APP}node_modules/.package-lock.json`, `${APP}npm-ls.json`, `${APP}package-lock.json`].sort(),
    );
    const manifests = unwanted.filter((path) => path.endsWith('/package.json'));
    expect(manifests).toContain(`${APP}package.json`);
    expect(manifests).toContain(`${APP}node_modules/@babel/runtime/helpers/esm/package.json`);
    expect(manifests).toContain(`${APP}node_modules/resolve/test/resolver/baz/package.json`);
    // 13 of resolve's test fixtures, one of @babel/runtime's module-type markers, the project's own.
    expect(manifests).toHaveLength(15);
  });
});

describe('npm lister', () => {
  it('declares itself', () => {
    expect(npmLister).toMatchObject({ name: 'npm', version: 1 });
  });

  it('wants the manifests at the root of installed packages, at any depth and in any node_modules', () => {
    for (const path of [
      'node_modules/lodash/package.json',
      'node_modules/@babel/code-frame/package.json',
      'app/node_modules/a/node_modules/b/node_modules/c/package.json',
      'app/node_modules/@s/a/node_modules/@t/b/package.json',
      'usr/lib/node_modules/npm/package.json',
      'usr/lib/node_modules/npm/node_modules/@npmcli/arborist/package.json',
      'usr/local/lib/node_modules/corepack/package.json',
      'app/node_modules/.pnpm/lodash@4.17.15/node_modules/lodash/package.json',
      'app/node_modules/.pnpm/@babel+code-frame@7.0.0/node_modules/@babel/code-frame/package.json',
    ]) {
      expect(npmLister.wants(path), path).toBe(true);
    }
  });

  it('wants no other package.json, nor anything else', () => {
    for (const path of [
      'package.json',
      'usr/src/app/package.json',
      'usr/src/app/packages/workspace-a/package.json',
      'node_modules/package.json',
      'node_modules/@scope/package.json',
      'node_modules/foo/lib/package.json',
      'node_modules/foo/test/fixtures/x/package.json',
      'node_modules/foo/test/fixtures/node_modules/x/package.json',
      'node_modules/foo/node_modules/package.json',
      'node_modules/.bin/package.json',
      'node_modules/.cache/foo/package.json',
      'node_modules/.foo-AbCd1234/package.json',
      'node_modules/@scope/.bar-AbCd1234/package.json',
      'node_modules/@/x/package.json',
      'node_modules/.package-lock.json',
      'node_modules/lodash/index.js',
      'node_modules/lodash/package.json.bak',
      'node_modules/lodash/not-package.json',
      'node_modules/.pnpm/lock.yaml',
      'node_modules/.pnpm/node_modules/lodash/package.json',
      'usr/local/bin/node',
    ]) {
      expect(npmLister.wants(path), path).toBe(false);
    }
  });

  it('lists scoped, nested and global packages with their locations', () => {
    const { packages, unreadable } = npmLister.list(
      layer({
        'app/node_modules/@babel/code-frame/package.json': manifest({ name: '@babel/code-frame', version: '7.0.0' }),
        'app/node_modules/mkdirp/node_modules/minimist/package.json': manifest({ name: 'minimist', version: '0.0.8' }),
        'app/node_modules/minimist/package.json': manifest({ name: 'minimist', version: '1.2.0' }),
        'usr/local/lib/node_modules/npm/package.json': manifest({ name: 'npm', version: '10.8.2' }),
      }),
    );
    expect(unreadable).toEqual([]);
    expect(packages).toEqual([
      { ecosystem: 'npm', name: '@babel/code-frame', version: '7.0.0', location: 'app/node_modules/@babel/code-frame/package.json' },
      { ecosystem: 'npm', name: 'minimist', version: '1.2.0', location: 'app/node_modules/minimist/package.json' },
      { ecosystem: 'npm', name: 'minimist', version: '0.0.8', location: 'app/node_modules/mkdirp/node_modules/minimist/package.json' },
      { ecosystem: 'npm', name: 'npm', version: '10.8.2', location: 'usr/local/lib/node_modules/npm/package.json' },
    ]);
  });

  it('names a package without a name after its folder, scope included', () => {
    const { packages } = npmLister.list(
      layer({
        'node_modules/plain/package.json': manifest({ version: '1.0.0' }),
        'node_modules/@scope/nameless/package.json': manifest({ name: '', version: '2.0.0' }),
        'node_modules/.pnpm/x@3.0.0/node_modules/x/package.json': manifest({ version: '3.0.0' }),
      }),
    );
    expect(packages.map((p) => `${p.name}@${p.version}`)).toEqual(['x@3.0.0', '@scope/nameless@2.0.0', 'plain@1.0.0']);
  });

  it('names an alias by the package it installs, at the alias folder', () => {
    const { packages } = npmLister.list(layer({ 'node_modules/foo/package.json': manifest({ name: 'bar', version: '1.0.0' }) }));
    expect(packages).toEqual([{ ecosystem: 'npm', name: 'bar', version: '1.0.0', location: 'node_modules/foo/package.json' }]);
  });

  it('lists versions as npm normalises them, and reads a manifest with a byte order mark', () => {
    const { packages, unreadable } = npmLister.list(
      layer({
        'node_modules/a/package.json': manifest({ name: 'a', version: 'v1.2.3' }),
        'node_modules/b/package.json': manifest({ name: 'b', version: ' =2.0.0-beta.1+build.5 ' }),
        'node_modules/c/package.json': '\uFEFF' + manifest({ name: 'c', version: '3.0.0' }),
      }),
    );
    expect(unreadable).toEqual([]);
    expect(packages.map((p) => `${p.name}@${p.version}`)).toEqual(['a@1.2.3', 'b@2.0.0-beta.1', 'c@3.0.0']);
  });

  it('reports the manifests it cannot read, with where and why, and lists the others', () => {
    const { packages, unreadable } = npmLister.list(
      layer({
        'node_modules/broken/package.json': '{"name": "broken", "version": "1.0.0"',
        'node_modules/array/package.json': '[]',
        'node_modules/versionless/package.json': manifest({ name: 'versionless' }),
        'node_modules/numeric/package.json': manifest({ name: 'numeric', version: 1 }),
        'node_modules/latest/package.json': manifest({ name: 'latest', version: 'latest' }),
        'node_modules/objname/package.json': manifest({ name: { first: 'x' }, version: '1.0.0' }),
        'node_modules/fine/package.json': manifest({ name: 'fine', version: '1.0.0' }),
      }),
    );
    expect(packages.map((p) => p.location)).toEqual(['node_modules/fine/package.json']);
    const why = Object.fromEntries(unreadable.map((u) => [u.location.split('/')[1], u.why]));
    expect(Object.keys(why).sort()).toEqual(['array', 'broken', 'latest', 'numeric', 'objname', 'versionless']);
    expect(why.broken).toMatch(/^not JSON: /);
    expect(why).toMatchObject({
      array: 'not a JSON object',
      versionless: 'no version',
      numeric: 'version is not a string (number)',
      latest: 'version "latest" is not a semantic version',
      objname: 'name is not a string (object)',
    });
  });

  it('reads only its own files when the map holds other listers', () => {
    const { packages, unreadable } = npmLister.list(
      layer({
        'var/lib/dpkg/status': 'Package: x',
        'usr/src/app/package.json': manifest({ name: 'app', version: '1.0.0' }),
        'node_modules/foo/lib/package.json': manifest({ type: 'module' }),
        'node_modules/foo/package.json': manifest({ name: 'foo', version: '1.0.0' }),
      }),
    );
    expect(unreadable).toEqual([]);
    expect(packages.map((p) => p.location)).toEqual(['node_modules/foo/package.json']);
  });

  it('lists the same files the same way whatever their order', () => {
    const entries = Object.entries({
      'z/node_modules/a/package.json': manifest({ name: 'a', version: '1.0.0' }),
      'a/node_modules/b/package.json': manifest({ name: 'b', version: '1.0.0' }),
      'm/node_modules/c/package.json': '{',
    });
    const forward = npmLister.list(layer(Object.fromEntries(entries)));
    expect(npmLister.list(layer(Object.fromEntries(entries.reverse())))).toEqual(forward);
  });
});
