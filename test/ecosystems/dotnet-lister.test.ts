import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { LayerFiles } from '../../src/model/indexing.js';
import { dotnetDepsLister } from '../../src/ecosystems/nuget/lister.js';
import { expectedPackages } from './listed-packages.js';

/**
 * Real deps.json files (PROVENANCE.md), each beside `<app>.jq-packages.txt`: its `package`
 * libraries as jq read them when the fixture was taken, one `name version` a line, the name
 * lower-cased:
 *   jq -r '.libraries | to_entries[] | select(.value.type == "package") | .key | split("/")
 *          | "\(.[0] | ascii_downcase) \(.[1])"'
 * The lister must find exactly those, field by field.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/dotnet/', import.meta.url));

const layer = (entries: Record<string, unknown>): LayerFiles =>
  new Map(Object.entries(entries).map(([path, value]) => [path, Buffer.from(typeof value === 'string' ? value : JSON.stringify(value))]));

describe('.NET deps.json lister on real files, against jq', () => {
  it.each([
    // Two projects (the library and a project it references), 12 packages, Newtonsoft.Json 13.0.1.
    ['TestLibrary', 12],
    // A self-contained single-file app: a runtimepack and 51 packages (Humanizer's satellites).
    ['dotnetapp', 51],
    // One package beside two referenceassembly libraries.
    ['MyApp', 1],
  ])('%s: every package, name, version and location', (app, count) => {
    const location = `app/${app}.deps.json`;
    const files = new Map([[location, readFileSync(`${FIXTURES}${app}.deps.json`)]]);
    const expected = expectedPackages(`${FIXTURES}${app}.jq-packages.txt`, 'nuget', location);
    const { packages, unreadable } = dotnetDepsLister.list(files);
    expect(unreadable).toEqual([]);
    expect(expected).toHaveLength(count);
    expect(packages).toEqual(expected);
  });

  it('skips the application, its projects, the runtime pack and reference assemblies', () => {
    const files = new Map([
      ['a/TestLibrary.deps.json', readFileSync(`${FIXTURES}TestLibrary.deps.json`)],
      ['b/dotnetapp.deps.json', readFileSync(`${FIXTURES}dotnetapp.deps.json`)],
      ['c/MyApp.deps.json', readFileSync(`${FIXTURES}MyApp.deps.json`)],
    ]);
    const names = new Set(dotnetDepsLister.list(files).packages.map((p) => p.name));
    for (const skipped of ['testlibrary', 'testcommon', 'dotnetapp', 'myapp', 'microsoft.aspnetcore.dataprotection']) {
      expect(names.has(skipped)).toBe(false);
    }
    expect([...names].some((n) => n.startsWith('runtimepack'))).toBe(false);
    expect(names.has('newtonsoft.json')).toBe(true);
  });
});

describe('.NET deps.json lister', () => {
  it('wants <name>.deps.json anywhere, and nothing else', () => {
    expect(dotnetDepsLister.wants('app/MyApp.deps.json')).toBe(true);
    expect(dotnetDepsLister.wants('MyApp.deps.json')).toBe(true);
    expect(dotnetDepsLister.wants('usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.0/Microsoft.NETCore.App.deps.json')).toBe(true);
    expect(dotnetDepsLister.wants('app/.deps.json')).toBe(false);
    expect(dotnetDepsLister.wants('app/MyApp.runtimeconfig.json')).toBe(false);
    expect(dotnetDepsLister.wants('app/MyApp.deps.json.bak')).toBe(false);
  });

  it('reads a byte order mark, lower-cases names, keeps versions as written', () => {
    const files = new Map([
      [
        'app/Web.deps.json',
        Buffer.from(
          '\uFEFF' +
            JSON.stringify({
              libraries: {
                'Web/1.0.0': { type: 'project' },
                'Newtonsoft.Json/12.0.1': { type: 'package' },
                'System.Text.Encodings.Web/4.5.0-preview1-26216-02': { type: 'package' },
                'Legacy/1.0.0.0': { type: 'reference' },
              },
            }),
        ),
      ],
    ]);
    expect(dotnetDepsLister.list(files)).toEqual({
      packages: [
        { ecosystem: 'nuget', name: 'newtonsoft.json', version: '12.0.1', location: 'app/Web.deps.json' },
        { ecosystem: 'nuget', name: 'system.text.encodings.web', version: '4.5.0-preview1-26216-02', location: 'app/Web.deps.json' },
      ],
      unreadable: [],
    });
  });

  it('reports broken files and entries, and still lists the rest', () => {
    const files = layer({
      'a/A.deps.json': '{"libraries": ',
      'b/B.deps.json': [],
      'c/C.deps.json': { runtimeTarget: { name: '.NETCoreApp,Version=v8.0' } },
      'd/D.deps.json': {
        libraries: {
          'Serilog/2.10.0': { type: 'package' },
          NoVersion: { type: 'package' },
          'Bad/1.0.0.0.0': { type: 'package' },
          'Odd/1.0.0': 'package',
        },
      },
    });
    const { packages, unreadable } = dotnetDepsLister.list(files);
    expect(packages).toEqual([{ ecosystem: 'nuget', name: 'serilog', version: '2.10.0', location: 'd/D.deps.json' }]);
    expect(unreadable.map((u) => `${u.location}: ${u.why.replace(/^not JSON: .*/, 'not JSON')}`)).toEqual([
      'a/A.deps.json: not JSON',
      'b/B.deps.json: not a JSON object',
      'c/C.deps.json: no libraries object',
      'd/D.deps.json: libraries["NoVersion"]: not Name/Version',
      'd/D.deps.json: Bad: version "1.0.0.0.0" is not a nuget version',
      'd/D.deps.json: libraries["Odd/1.0.0"]: not a JSON object',
    ]);
  });
});
