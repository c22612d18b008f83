import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApplicationPackage, LayerFiles } from '../../src/model/indexing.js';
import { pythonLister } from '../../src/ecosystems/pypi/lister.js';

/**
 * The Python lister's test layers: real installs under test/fixtures/python, with what Python's
 * importlib.metadata listed there, and hand-made core metadata files for the edge cases, at the
 * places pip, Debian and virtualenvs put them. The unit test states what the lister makes of each
 * edge case; the oracle test has importlib.metadata read the same layer, so they are checked
 * against Python too.
 */

export const PYTHON_FIXTURES = fileURLToPath(new URL('../fixtures/python/', import.meta.url));

/** The installs copied under test/fixtures/python, each with its `<set>.importlib.json`. */
export const PYTHON_FIXTURE_SETS = ['debian-12', 'venv-pip'] as const;

/** A row of importlib-oracle.py's output: what Python's importlib.metadata lists. */
export interface OracleRow {
  readonly location: string;
  readonly name: string | null;
  readonly version: string | null;
}

/** The lister's packages as oracle rows, in the oracle's order. */
export function asOracleRows(packages: readonly ApplicationPackage[]): OracleRow[] {
  return packages.map(({ location, name, version }) => ({ location, name, version })).sort((a, b) => (a.location < b.location ? -1 : 1));
}

/** A layer holding a directory's files that the lister wants, as the archive walk hands them over. */
export function layerFromDirectory(dir: string): LayerFiles {
  const paths = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
  return new Map(paths.filter(pythonLister.wants).map((path) => [path, readFileSync(join(dir, path))]));
}

export const layerOf = (cases: readonly MetadataCase[]): LayerFiles => new Map(cases.map((c) => [c.path, c.content]));

const LOCAL = 'usr/local/lib/python3.11/site-packages';
const VENV = 'opt/venv/lib/python3.12/site-packages';
const USER = 'root/.local/lib/python3.11/site-packages';
const DEBIAN = 'usr/lib/python3/dist-packages';

export interface MetadataCase {
  readonly path: string;
  readonly content: Buffer;
}

const text = (path: string, content: string): MetadataCase => ({ path, content: Buffer.from(content, 'utf8') });

/** Cases Python reads as the lister does (UTF-8 text: importlib.metadata refuses anything else). */
export const PYTHON_READABLE_CASES: readonly MetadataCase[] = [
  // A description after the blank line may hold header-like lines: they are not headers.
  text(
    `${LOCAL}/Django-4.2.7.dist-info/METADATA`,
    'Metadata-Version: 2.1\nName: Django\nVersion: 4.2.7\nSummary: A high-level Python web framework\n\n' +
      'Django\n======\n\nVersion: 9.9.9\nName: not-django\n',
  ),
  text(
    `${VENV}/zope.interface-6.1.dist-info/METADATA`,
    'Metadata-Version: 2.1\r\nName: zope.interface\r\nVersion: 6.1\r\nLicense: ZPL 2.1\r\n\r\nzope.interface\r\n',
  ),
  // Old setuptools folded long values onto indented lines, the Description included.
  text(
    `${USER}/typing_extensions-4.8.0.dist-info/METADATA`,
    'Metadata-Version: 2.1\nSummary: Backported and Experimental Type Hints\n  for Python 3.8+\n' +
      'Name: typing_extensions\nDescription: Typing Extensions\n        |\n        |Enable use of new type system features.\n' +
      'Version: 4.8.0\nKeywords: annotations,\n\tbackport\n',
  ),
  // distutils' install_egg_info writes the PKG-INFO as the .egg-info file itself.
  text(`${DEBIAN}/pycairo-1.20.1.egg-info`, 'Metadata-Version: 1.0\nName: pycairo\nVersion: 1.20.1\nSummary: Python interface for cairo\n'),
  text(
    `${DEBIAN}/six-1.16.0.egg-info/PKG-INFO`,
    'Metadata-Version: 1.2\nName: six\nVersion: 1.16.0\nSummary: Python 2 and 3 compatibility utilities\n',
  ),
  text(`${LOCAL}/Paste-3.5.0-py3.11.egg/EGG-INFO/PKG-INFO`, 'Metadata-Version: 2.1\nName: Paste\nVersion: 3.5.0\n'),
  // The first of a repeated header counts, as email.message.Message.get answers.
  text(
    `${LOCAL}/Flask_SQLAlchemy-3.1.1.dist-info/METADATA`,
    'Metadata-Version: 2.1\nName: Flask_SQLAlchemy\nName: other\nVersion: 3.1.1\nVersion: 0\n',
  ),
  text(`${LOCAL}/broken-1.0.dist-info/METADATA`, 'Metadata-Version: 2.1\nName: broken\nSummary: no version\n'),
  text(`${VENV}/noname.egg-info/PKG-INFO`, 'Metadata-Version: 1.0\nVersion: 1.0\n'),
  text(`${VENV}/late-1.0.dist-info/METADATA`, 'Metadata-Version: 2.1\nName: late\n\nVersion: 1.0\n'),
  // A line that is neither a header nor a continuation ends the headers: the rest is the body.
  text(`${VENV}/cut-2.0.dist-info/METADATA`, 'Metadata-Version: 2.1\nName: cut\nthis is no header\nVersion: 2.0\n'),
];

/**
 * A description in Latin-1, which old distutils wrote as it came: Python's importlib.metadata
 * raises UnicodeDecodeError on it, the lister still reads the ASCII Name and Version.
 */
export const LATIN1_CASE: MetadataCase = {
  path: `${LOCAL}/Babel-2.9.1.egg-info/PKG-INFO`,
  content: Buffer.concat([
    Buffer.from('Metadata-Version: 1.1\nName: Babel\nVersion: 2.9.1\nAuthor: '),
    Buffer.from('Fran\xe7ois', 'latin1'),
    Buffer.from('\n'),
  ]),
};
