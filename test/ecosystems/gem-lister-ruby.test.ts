import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gemspecLister } from '../../src/ecosystems/gem/lister.js';
import { GEM_FIXTURES, INSTALL, installLayer, oraclePackages } from './gem-fixture.js';

/**
 * The gemspec lister against Ruby itself, where ruby is installed (apt-get install ruby): RubyGems
 * loads each gemspec (test/fixtures/gem/oracle.rb runs Gem::Specification.load, which evaluates the
 * file) and the lister, which only reads it, must find the same name and version. Run over the
 * recorded installation (which must still read as ruby-oracle.txt recorded it) and over gemspecs in
 * the other forms the lister accepts. Not a unit test: it spawns ruby.
 */
const hasRuby = spawnSync('ruby', ['--version']).status === 0;

function rubyReading(root: string): string {
  const run = spawnSync('ruby', [join(GEM_FIXTURES, 'oracle.rb'), root], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`oracle.rb failed: ${run.stderr}`);
  return run.stdout;
}

describe.skipIf(!hasRuby)('gemspec lister against a live Ruby', () => {
  const work = mkdtempSync(join(tmpdir(), 'tarsier-gemspecs-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('reads the recorded installation as RubyGems loads it today', () => {
    const live = rubyReading(INSTALL);
    expect(live).toBe(readFileSync(join(GEM_FIXTURES, 'ruby-oracle.txt'), 'utf8'));
    expect(gemspecLister.list(installLayer()).packages).toEqual(oraclePackages(live));
  });

  it('reads the other string forms, a platform gem and a stale stub line as RubyGems loads them', () => {
    const specs = {
      'a-1.0.gemspec': ['s', 'name = "a".freeze', 'version = "1.0".freeze', ''],
      'b-2.0.0.rc1.gemspec': ['s', 'name = %q{b}', 'version = %q(2.0.0.rc1)', ''],
      'c-3.gemspec': ['spec', "name = 'c'", 'version = %Q<3>', ''],
      'nokogiri-1.13.10-x86_64-linux.gemspec': [
        's',
        'name = "nokogiri".freeze',
        'version = "1.13.10"',
        '  s.platform = "x86_64-linux".freeze',
      ],
      'stale-3.1.4.gemspec': ['s', 'name = "stale".freeze', 'version = "3.1.4"', '', '# stub: stale 2.1.4 ruby lib'],
    };
    const dir = join(work, 'specifications');
    mkdirSync(dir, { recursive: true });
    const files = new Map<string, Buffer>();
    for (const [file, [v, name, version, extra, stub = '']] of Object.entries(specs)) {
      const text = `# -*- encoding: utf-8 -*-\n${stub}\nGem::Specification.new do |${v}|\n  ${v}.${name}\n  ${v}.${version}\n${extra}\nend\n`;
      writeFileSync(join(dir, file), text);
      files.set(`specifications/${file}`, Buffer.from(text));
    }
    const { packages, unreadable } = gemspecLister.list(files);
    expect(unreadable).toEqual([]);
    expect(packages).toEqual(oraclePackages(rubyReading(work)));
    expect(packages).toHaveLength(5);
  });
});
