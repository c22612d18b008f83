import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ApplicationPackage } from '../../src/model/indexing.js';
import { parseHeaders, pythonLister } from '../../src/ecosystems/pypi/lister.js';
import {
  asOracleRows,
  LATIN1_CASE,
  layerFromDirectory,
  layerOf,
  PYTHON_READABLE_CASES,
  PYTHON_FIXTURE_SETS,
  PYTHON_FIXTURES,
  type OracleRow,
} from './python-layers.js';

const pypi = (location: string, name: string, version: string): ApplicationPackage => ({ ecosystem: 'pypi', name, version, location });

describe('python lister', () => {
  it('declares itself', () => {
    expect(pythonLister).toMatchObject({ name: 'python', version: 1 });
  });

  it('wants the core metadata files directly in a site-packages or dist-packages directory', () => {
    for (const path of [
      'usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/METADATA',
      'usr/lib/python3/dist-packages/Pygments-2.14.0.egg-info/PKG-INFO',
      'usr/lib/python3/dist-packages/cupshelpers-1.0-py3.10.egg-info',
      'usr/lib/python3/dist-packages/cryptography.egg-info/PKG-INFO',
      'usr/local/lib/python3.11/site-packages/django-5.2.17.dist-info/METADATA',
      'opt/venv/lib/python3.12/site-packages/zope_interface-8.6.dist-info/METADATA',
      'root/.local/lib/python3.11/site-packages/requests-2.25.0.dist-info/METADATA',
      'usr/lib64/python3.9/site-packages/rpm-4.16.1.3-py3.9.egg-info',
      'usr/local/lib/python3.11/site-packages/Paste-3.5.0-py3.11.egg/EGG-INFO/PKG-INFO',
      'site-packages/six-1.16.0.dist-info/METADATA',
      'usr/local/lib/python3.11/site-packages/Legacy-1.0.EGG-INFO/PKG-INFO',
    ]) {
      expect(pythonLister.wants(path), path).toBe(true);
    }
  });

  it('wants nothing else', () => {
    for (const path of [
      'usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/RECORD',
      'usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/WHEEL',
      'usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/top_level.txt',
      'usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/PKG-INFO',
      'usr/lib/python3/dist-packages/Pygments-2.14.0.egg-info/requires.txt',
      'usr/lib/python3/dist-packages/Pygments-2.14.0.egg-info/METADATA',
      'usr/local/lib/python3.11/site-packages/Paste-3.5.0-py3.11.egg/EGG-INFO/requires.txt',
      'usr/local/lib/python3.11/site-packages/Paste-3.5.0-py3.11.egg/PKG-INFO',
      // Not where Python looks: outside a site directory, or below one of its packages.
      'build/PyYAML-6.0.dist-info/METADATA',
      'src/mypkg.egg-info/PKG-INFO',
      'home/user/project/mypkg.egg-info',
      'usr/lib/python3/dist-packages/pip/_vendor/vendored-1.0.dist-info/METADATA',
      'usr/lib/python3/dist-packages/metadata',
      'usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/metadata',
      'usr/lib/python3/my-site-packages/a-1.dist-info/METADATA',
    ]) {
      expect(pythonLister.wants(path), path).toBe(false);
    }
  });

  it('lists nothing for an empty layer', () => {
    expect(pythonLister.list(new Map())).toEqual({ packages: [], unreadable: [] });
  });

  it('reads name and version from the headers, normalising the name as PEP 503 does', () => {
    const { packages, unreadable } = pythonLister.list(layerOf(PYTHON_READABLE_CASES));
    expect(packages).toEqual([
      pypi('opt/venv/lib/python3.12/site-packages/zope.interface-6.1.dist-info/METADATA', 'zope-interface', '6.1'),
      pypi('root/.local/lib/python3.11/site-packages/typing_extensions-4.8.0.dist-info/METADATA', 'typing-extensions', '4.8.0'),
      pypi('usr/lib/python3/dist-packages/pycairo-1.20.1.egg-info', 'pycairo', '1.20.1'),
      pypi('usr/lib/python3/dist-packages/six-1.16.0.egg-info/PKG-INFO', 'six', '1.16.0'),
      pypi('usr/local/lib/python3.11/site-packages/Django-4.2.7.dist-info/METADATA', 'django', '4.2.7'),
      pypi('usr/local/lib/python3.11/site-packages/Flask_SQLAlchemy-3.1.1.dist-info/METADATA', 'flask-sqlalchemy', '3.1.1'),
      pypi('usr/local/lib/python3.11/site-packages/Paste-3.5.0-py3.11.egg/EGG-INFO/PKG-INFO', 'paste', '3.5.0'),
    ]);
    expect(unreadable).toEqual([
      { location: 'opt/venv/lib/python3.12/site-packages/cut-2.0.dist-info/METADATA', why: 'core metadata without Version header' },
      { location: 'opt/venv/lib/python3.12/site-packages/late-1.0.dist-info/METADATA', why: 'core metadata without Version header' },
      { location: 'opt/venv/lib/python3.12/site-packages/noname.egg-info/PKG-INFO', why: 'core metadata without Name header' },
      { location: 'usr/local/lib/python3.11/site-packages/broken-1.0.dist-info/METADATA', why: 'core metadata without Version header' },
    ]);
  });

  it('reports a file with neither header, and an empty file', () => {
    const files = new Map([
      ['usr/lib/python3/dist-packages/empty-1.0.egg-info', Buffer.alloc(0)],
      ['usr/lib/python3/dist-packages/binary-1.0.dist-info/METADATA', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2])],
    ]);
    expect(pythonLister.list(files)).toEqual({
      packages: [],
      unreadable: [
        { location: 'usr/lib/python3/dist-packages/binary-1.0.dist-info/METADATA', why: 'core metadata without Name or Version header' },
        { location: 'usr/lib/python3/dist-packages/empty-1.0.egg-info', why: 'core metadata without Name or Version header' },
      ],
    });
  });

  it('reads a file that is not UTF-8 past its undecodable bytes', () => {
    expect(pythonLister.list(layerOf([LATIN1_CASE]))).toEqual({ packages: [pypi(LATIN1_CASE.path, 'babel', '2.9.1')], unreadable: [] });
  });

  it('lists the same distribution at each place it is installed, once per place', () => {
    const metadata = Buffer.from('Metadata-Version: 2.1\nName: PyYAML\nVersion: 6.0\n');
    const files = new Map([
      ['usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/METADATA', metadata],
      ['opt/venv/lib/python3.11/site-packages/PyYAML-6.0.dist-info/METADATA', metadata],
    ]);
    expect(pythonLister.list(files).packages).toEqual([
      pypi('opt/venv/lib/python3.11/site-packages/PyYAML-6.0.dist-info/METADATA', 'pyyaml', '6.0'),
      pypi('usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/METADATA', 'pyyaml', '6.0'),
    ]);
  });

  it('ignores files it does not want', () => {
    const files = new Map([['usr/lib/python3/dist-packages/PyYAML-6.0.dist-info/RECORD', Buffer.from('Name: x\nVersion: 1\n')]]);
    expect(pythonLister.list(files)).toEqual({ packages: [], unreadable: [] });
  });
});

describe('core metadata headers', () => {
  it('unfolds continuation lines and stops at the blank line, CRLF or not', () => {
    const headers = parseHeaders('Name: a\r\nSummary: one\r\n  two\r\n\tthree\r\nVersion:  1.0  \r\n\r\nBody: no\r\n');
    expect([...headers]).toEqual([
      ['name', 'a'],
      ['summary', 'one two three'],
      ['version', '1.0'],
    ]);
  });

  it('takes header names case-insensitively, and lines ending in a lone CR', () => {
    expect([...parseHeaders('NAME: A\rversion: 2\r')]).toEqual([
      ['name', 'A'],
      ['version', '2'],
    ]);
  });

  it('skips a header without a name and its continuations, as Python does', () => {
    expect([...parseHeaders(': nameless\n more\nName: a\n')]).toEqual([['name', 'a']]);
  });
});

describe('python lister against importlib.metadata on real installs (test/fixtures/python)', () => {
  for (const set of PYTHON_FIXTURE_SETS) {
    it(`${set}: the same distributions as Python lists`, () => {
      const expected = JSON.parse(readFileSync(join(PYTHON_FIXTURES, `${set}.importlib.json`), 'utf8')) as OracleRow[];
      const { packages, unreadable } = pythonLister.list(layerFromDirectory(join(PYTHON_FIXTURES, set)));
      expect(unreadable).toEqual([]);
      expect(asOracleRows(packages)).toEqual(expected);
      expect(packages.every((p) => p.ecosystem === 'pypi')).toBe(true);
      console.log(`${set}: ${packages.length} distributions, as importlib.metadata lists them`);
    });
  }

  it('debian-12 holds each kind of metadata file, and a directory named without a version', () => {
    const locations = pythonLister.list(layerFromDirectory(join(PYTHON_FIXTURES, 'debian-12'))).packages.map((p) => p.location);
    const dir = 'usr/lib/python3/dist-packages';
    expect(locations).toEqual(
      expect.arrayContaining([
        `${dir}/PyYAML-6.0.dist-info/METADATA`,
        `${dir}/Pygments-2.14.0.egg-info/PKG-INFO`,
        `${dir}/pyinotify-0.9.6.egg-info`,
        `${dir}/cryptography.egg-info/PKG-INFO`,
      ]),
    );
  });

  it('keeps names as PEP 503 has them where the metadata spells them otherwise', () => {
    const names = (set: string): string[] =>
      pythonLister.list(layerFromDirectory(join(PYTHON_FIXTURES, set))).packages.map((p) => `${p.name} ${p.version}`);
    expect(names('venv-pip')).toEqual(
      expect.arrayContaining(['django 5.2.17', 'zope-interface 8.6', 'typing-extensions 4.16.0', 'pyyaml 6.0.3']),
    );
    expect(names('debian-12')).toEqual(
      expect.arrayContaining([
        'django 3.2.25',
        'zope-interface 5.5.2',
        'typing-extensions 4.4.0',
        'dbus-python 1.3.2',
        'pyjwt 2.6.0',
        'python-dateutil 2.8.2',
      ]),
    );
  });
});
