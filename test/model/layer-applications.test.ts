/**
 * The application packages installed after each layer (applicationsAfter): a whiteout removes what
 * is at or below its path, an opaque directory what lower layers put below it (not the layer's own),
 * a manifest rewritten in place replaces what was listed there, and a package at two places is
 * removed from one only.
 */
import { describe, expect, it } from 'vitest';
import type { ApplicationPackage } from '../../src/model/indexing.js';
import { applicationsAfter, type InstalledApplications } from '../../src/model/layer.js';

const npm = (name: string, version: string, location: string): ApplicationPackage => ({ ecosystem: 'npm', name, version, location });
const installed = (packages: InstalledApplications): string[] =>
  [...packages.values()].map((p) => `${p.name}@${p.version} ${p.location}`).sort();

const BASE = applicationsAfter(new Map(), {
  packages: [
    npm('lodash', '4.17.15', 'app/node_modules/lodash/package.json'),
    npm('lodash', '4.17.15', 'app/node_modules/a/node_modules/lodash/package.json'),
    npm('minimist', '1.2.0', 'app/node_modules/minimist/package.json'),
    npm('npm', '10.0.0', 'usr/lib/node_modules/npm/package.json'),
  ],
  removed: [],
});

describe('applicationsAfter', () => {
  it('keeps what a layer without applications or whiteouts inherits', () => {
    expect(applicationsAfter(BASE, undefined)).toBe(BASE);
    expect(installed(applicationsAfter(BASE, { packages: [], removed: [] }))).toEqual(installed(BASE));
  });

  it('removes what a whiteout deletes, at or below its path, and only there', () => {
    const after = applicationsAfter(BASE, { packages: [], removed: ['app/node_modules/lodash', 'usr/lib/node_modules/npm/package.json'] });
    expect(installed(after)).toEqual([
      'lodash@4.17.15 app/node_modules/a/node_modules/lodash/package.json',
      'minimist@1.2.0 app/node_modules/minimist/package.json',
    ]);
  });

  it("removes below an opaque directory what lower layers put there, keeping the layer's own", () => {
    const after = applicationsAfter(BASE, {
      packages: [npm('express', '4.16.0', 'app/node_modules/express/package.json')],
      removed: ['app/node_modules/'],
    });
    expect(installed(after)).toEqual([
      'express@4.16.0 app/node_modules/express/package.json',
      'npm@10.0.0 usr/lib/node_modules/npm/package.json',
    ]);
  });

  it('replaces what a manifest rewritten in place listed', () => {
    const after = applicationsAfter(BASE, { packages: [npm('minimist', '1.2.6', 'app/node_modules/minimist/package.json')], removed: [] });
    expect(installed(after).filter((p) => p.startsWith('minimist'))).toEqual(['minimist@1.2.6 app/node_modules/minimist/package.json']);
    expect(after.size).toBe(BASE.size);
  });
});
