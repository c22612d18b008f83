import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pythonLister } from '../../src/ecosystems/pypi/lister.js';
import {
  asOracleRows,
  layerFromDirectory,
  PYTHON_FIXTURE_SETS,
  PYTHON_FIXTURES,
  PYTHON_READABLE_CASES,
  type OracleRow,
} from './python-layers.js';

/**
 * Python's importlib.metadata run live (test/fixtures/python/importlib-oracle.py), where the
 * machine has Python 3: over the committed installs, whose saved listing must still be what Python
 * says; over the lister's edge cases; and over the machine's own Debian python3-* packages.
 * python-lister.test.ts compares with the saved listings on any machine.
 */

const PYTHON = '/usr/bin/python3';
const ORACLE = join(PYTHON_FIXTURES, 'importlib-oracle.py');
const hasPython = existsSync(PYTHON);

function importlibMetadata(root: string): OracleRow[] {
  const run = spawnSync(PYTHON, [ORACLE, root], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`importlib-oracle.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as OracleRow[];
}

describe.runIf(hasPython)('python lister oracle: importlib.metadata run live', () => {
  for (const set of PYTHON_FIXTURE_SETS) {
    it(`${set}: Python still lists what ${set}.importlib.json saved`, () => {
      const saved = JSON.parse(readFileSync(join(PYTHON_FIXTURES, `${set}.importlib.json`), 'utf8')) as OracleRow[];
      expect(importlibMetadata(join(PYTHON_FIXTURES, set))).toEqual(saved);
    });
  }

  it('the edge cases: Python lists what the lister lists, and lacks a Name or Version where the lister reports why', () => {
    const root = mkdtempSync(join(tmpdir(), 'tarsier-python-oracle-'));
    try {
      for (const { path, content } of PYTHON_READABLE_CASES) {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), content);
      }
      const python = importlibMetadata(root);
      const { packages, unreadable } = pythonLister.list(layerFromDirectory(root));
      expect(asOracleRows(packages)).toEqual(python.filter((row) => row.name !== null && row.version !== null));
      expect(unreadable.map((u) => u.location).sort()).toEqual(
        python.filter((row) => row.name === null || row.version === null).map((row) => row.location),
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  const debian = '/usr/lib/python3';
  it.runIf(existsSync(join(debian, 'dist-packages')))(`this machine's ${debian}/dist-packages`, () => {
    const python = importlibMetadata(debian);
    const { packages, unreadable } = pythonLister.list(layerFromDirectory(debian));
    expect(unreadable).toEqual([]);
    expect(asOracleRows(packages)).toEqual(python);
    console.log(`${debian}/dist-packages: ${packages.length} distributions, as importlib.metadata lists them`);
  });
});
