import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LayerFiles } from '../../src/model/indexing.js';
import { gemspecLister } from '../../src/ecosystems/gem/lister.js';
import { GEM_FIXTURES, installFiles, installLayer, oraclePackages } from './gem-fixture.js';

/**
 * The installed gem specifications of Debian 12's Ruby 3.1 with ruby-rack, ruby-nokogiri and
 * ruby-json, at their layer paths, and RubyGems' own reading of them (ruby-oracle.txt: each file
 * loaded by Gem::Specification.load, which runs it), both recorded by test/fixtures/gem/record.sh.
 * The lister, which does not run Ruby, must read every file as RubyGems does.
 * test/ecosystems/gem-lister-ruby.test.ts repeats the reading live where ruby is installed.
 */
const layer = (entries: Record<string, string>): LayerFiles =>
  new Map(Object.entries(entries).map(([path, text]) => [path, Buffer.from(text)]));
const SPECS = 'usr/local/bundle/specifications/';
const gemspec = (body: string, stub = ''): string => `# -*- encoding: utf-8 -*-\n${stub}\nGem::Specification.new do |s|\n${body}\nend\n`;

describe('gemspec lister on a real Debian installation, against RubyGems', () => {
  const expected = oraclePackages(readFileSync(join(GEM_FIXTURES, 'ruby-oracle.txt'), 'utf8'));

  it('wants every recorded specification', () => {
    expect(installFiles().filter((path) => !gemspecLister.wants(path))).toEqual([]);
  });

  it('reads every gem as Gem::Specification.load does: name, version, location', () => {
    const { packages, unreadable } = gemspecLister.list(installLayer());
    expect(unreadable).toEqual([]);
    expect(expected).toHaveLength(97);
    expect(packages).toEqual(expected);
    // Default gems, Debian's own integration directories, an architecture-specific one.
    for (const gem of ['json 2.6.1', 'json 2.6.3', 'racc 1.6.0', 'racc 1.6.2', 'rack 2.2.22', 'nokogiri 1.13.10', 'bundler 2.3.7']) {
      expect(packages.map((p) => `${p.name} ${p.version}`)).toContain(gem);
    }
  });
});

describe('gemspec lister', () => {
  it('wants gemspecs of a specifications directory and of its default/, nothing else', () => {
    expect(gemspecLister.wants('usr/local/bundle/specifications/rack-2.2.3.gemspec')).toBe(true);
    expect(gemspecLister.wants('usr/lib/ruby/gems/3.1.0/specifications/default/json-2.6.1.gemspec')).toBe(true);
    expect(gemspecLister.wants('specifications/rack-2.2.3.gemspec')).toBe(true);
    expect(gemspecLister.wants('usr/local/bundle/gems/rack-2.2.3/rack.gemspec')).toBe(false);
    expect(gemspecLister.wants('usr/local/bundle/specifications/nested/rack-2.2.3.gemspec')).toBe(false);
    expect(gemspecLister.wants('usr/local/bundle/specifications/rack-2.2.3.gemspec.bak')).toBe(false);
    expect(gemspecLister.wants('usr/local/bundle/specifications/.gemspec')).toBe(false);
    expect(gemspecLister.wants('default/rack-2.2.3.gemspec')).toBe(false);
  });

  it('reads the string forms RubyGems has written, a platform gem, and another block variable', () => {
    const files = layer({
      [`${SPECS}a-1.0.gemspec`]: gemspec('  s.name = "a".freeze\n  s.version = "1.0".freeze'),
      [`${SPECS}b-2.0.gemspec`]: gemspec('  s.name = %q{b}\n  s.version = %q(2.0.0.rc1)'),
      [`${SPECS}c-3.gemspec`]: gemspec("  spec.name = 'c'\n  spec.version = %Q<3>"),
      [`${SPECS}nokogiri-1.13.10-x86_64-linux.gemspec`]: gemspec(
        '  s.name = "nokogiri".freeze\n  s.version = "1.13.10"\n  s.platform = "x86_64-linux".freeze',
      ),
    });
    expect(gemspecLister.list(files)).toEqual({
      packages: [
        { ecosystem: 'rubygems', name: 'a', version: '1.0', location: `${SPECS}a-1.0.gemspec` },
        { ecosystem: 'rubygems', name: 'b', version: '2.0.0.rc1', location: `${SPECS}b-2.0.gemspec` },
        { ecosystem: 'rubygems', name: 'c', version: '3', location: `${SPECS}c-3.gemspec` },
        { ecosystem: 'rubygems', name: 'nokogiri', version: '1.13.10', location: `${SPECS}nokogiri-1.13.10-x86_64-linux.gemspec` },
      ],
      unreadable: [],
    });
  });

  it('prefers the assignments to the stub line, and falls back to it for what is no literal', () => {
    const files = layer({
      // The assignments are what loading the file gives, whatever the stub line says.
      [`${SPECS}stale-3.1.4.gemspec`]: gemspec('  s.name = "stale".freeze\n  s.version = "3.1.4"', '# stub: stale 2.1.4 ruby lib'),
      [`${SPECS}computed-1.2.0.gemspec`]: gemspec('  s.name = NAME\n  s.version = Computed::VERSION', '# stub: computed 1.2.0 ruby lib'),
    });
    expect(gemspecLister.list(files).packages.map((p) => `${p.name} ${p.version}`)).toEqual(['computed 1.2.0', 'stale 3.1.4']);
  });

  it('reports what it cannot read without running Ruby, and invalid versions', () => {
    const files = layer({
      [`${SPECS}a.gemspec`]: gemspec('  s.name = "a#{suffix}"\n  s.version = "1.0"'),
      [`${SPECS}b.gemspec`]: gemspec('  s.name = "b"\n  s.version = B::VERSION'),
      [`${SPECS}c.gemspec`]: gemspec('  s.name = "c"\n  s.version = "1.0 beta"'),
      [`${SPECS}d.gemspec`]: gemspec('  s.name = "d"\n  s.version = ""'),
      [`${SPECS}e.gemspec`]: 'not ruby at all',
    });
    expect(gemspecLister.list(files)).toEqual({
      packages: [],
      unreadable: [
        { location: `${SPECS}a.gemspec`, why: 'no literal name assignment and no stub line' },
        { location: `${SPECS}b.gemspec`, why: 'b: no literal version assignment and no stub line' },
        { location: `${SPECS}c.gemspec`, why: 'c: version "1.0 beta" is not a gem version' },
        { location: `${SPECS}d.gemspec`, why: 'd: version "" is not a gem version' },
        { location: `${SPECS}e.gemspec`, why: 'no literal name assignment and no stub line' },
      ],
    });
  });
});
