/** The matching rules the store links with: the affects rule and the advisory namespace of a layer's packages. */
import { describe, expect, it } from 'vitest';
import { MATCHING } from '../../src/ecosystems/matching.js';
import type { StoredFix } from '../../src/model/matching.js';

describe('the matching rules', () => {
  /** Whether one entry leaves a version affected, installed for every architecture the database does not name. */
  const affects = (format: 'dpkg' | 'rpm', fix: StoredFix, version: string, arches: string[] = []) =>
    MATCHING.match(format)([fix], { version, arches }) !== undefined;

  it('a fix leaves older versions affected, a missing fix every version, a not_affected entry none', () => {
    expect(affects('dpkg', { fixed_version: '1.2-3+deb12u1' }, '1.2-3')).toBe(true);
    expect(affects('dpkg', { fixed_version: '1.2-3+deb12u1' }, '1.2-3+deb12u1')).toBe(false);
    expect(affects('dpkg', { fixed_version: '1:0.9' }, '1.5')).toBe(true); // the epoch wins
    expect(affects('dpkg', { fixed_version: null }, '99')).toBe(true);
    expect(affects('dpkg', { fixed_version: null, fix_state: 'will_not_fix' }, '99')).toBe(true);
    expect(affects('dpkg', { fixed_version: null, fix_state: 'not_affected' }, '1.0')).toBe(false);
    expect(affects('rpm', { fixed_version: '0:2.6.7-3.azl3' }, '2.6.7-2.azl3')).toBe(true);
  });

  it('honours a lower bound (greater than) and an inclusive upper bound (less than or equal)', () => {
    // CBL-Mariner: golang "greater than 0:1.19.0.cm2" and "less than 0:1.20.7-1.cm2".
    const golang = { fixed_version: '0:1.20.7-1.cm2', affected_above: '0:1.19.0.cm2' };
    expect(affects('rpm', golang, '1.18.10-1.cm2')).toBe(false);
    // rpm compares the version first: 1.19.0 is below 1.19.0.cm2, so not above the bound.
    expect(affects('rpm', golang, '1.19.0-1.cm2')).toBe(false);
    expect(affects('rpm', golang, '1.19.1-1.cm2')).toBe(true);
    expect(affects('rpm', golang, '1.20.7-1.cm2')).toBe(false);
    // bind "less than or equal 0:9.16.33-1.cm2", no patch: affected through it, not after.
    const bind = { fixed_version: null, affected_through: '0:9.16.33-1.cm2' };
    expect(affects('rpm', bind, '9.16.33-1.cm2')).toBe(true);
    expect(affects('rpm', bind, '9.16.33-1.cm2.1')).toBe(false);
    expect(affects('rpm', bind, '9.16.32-3.cm2')).toBe(true);
  });

  it('honours an inclusive lower bound (OSV introduced): the bound itself is affected, versions before it are not', () => {
    // minimist's second range: introduced 1.0.0, fixed 1.2.2.
    const minimist = { fixed_version: '1.2.2-r0', affected_from: '1.0.0-r0' };
    expect(affects('rpm', minimist, '0.9.9-r0')).toBe(false);
    expect(affects('rpm', minimist, '1.0.0-r0')).toBe(true);
    expect(affects('rpm', minimist, '1.2.1-r0')).toBe(true);
    expect(affects('rpm', minimist, '1.2.2-r0')).toBe(false);
    // introduced with last_affected and no fix: from one version through another, both included.
    const window = { fixed_version: null, affected_from: '2.0-1', affected_through: '2.3-1' };
    expect(affects('rpm', window, '1.9-1')).toBe(false);
    expect(affects('rpm', window, '2.0-1')).toBe(true);
    expect(affects('rpm', window, '2.3-1')).toBe(true);
    expect(affects('rpm', window, '2.4-1')).toBe(false);
  });

  it('applies an entry limited to architectures only to packages installed for one of them', () => {
    const git = { fixed_version: '0:2.18.4-2.el8_2', arches: ['aarch64', 'ppc64le', 's390x', 'x86_64'] };
    expect(affects('rpm', git, '2.18.4-1.el8_2', ['x86_64'])).toBe(true);
    expect(affects('rpm', git, '2.18.4-1.el8_2', ['i686'])).toBe(false);
    expect(affects('rpm', git, '2.18.4-1.el8_2', ['noarch'])).toBe(false);
    // A multilib package is affected when one of its copies is.
    expect(affects('rpm', git, '2.18.4-1.el8_2', ['i686', 'x86_64'])).toBe(true);
    // What is not known never hides a vulnerability: a package indexed without its architecture.
    expect(affects('rpm', git, '2.18.4-1.el8_2', [])).toBe(true);
    // An entry for every architecture applies to noarch packages.
    expect(affects('rpm', { fixed_version: '0:2.18.4-2.el8_2' }, '2.18.4-1.el8_2', ['noarch'])).toBe(true);
  });

  it('of several entries of one package, the one affecting the installed version with the highest fix, or none, decides', () => {
    const match = MATCHING.match('rpm');
    const at = (version: string, arches: string[] = ['x86_64']) => ({ version, arches });
    // Azure Linux 3.0 xorg-x11-server CVE-2023-1393: "less than 1.20.10-6" and "less than 1.20.10-4".
    const xorg = [{ fixed_version: '0:1.20.10-6.azl3' }, { fixed_version: '0:1.20.10-4.azl3' }];
    expect(match(xorg, at('1.20.10-3.azl3'))?.fixed_version).toBe('0:1.20.10-6.azl3');
    expect(match(xorg, at('1.20.10-4.azl3'))?.fixed_version).toBe('0:1.20.10-6.azl3');
    expect(match(xorg, at('1.20.10-5.azl3'))?.fixed_version).toBe('0:1.20.10-6.azl3');
    expect(match(xorg, at('1.20.10-6.azl3'))).toBeUndefined();
    // A fix of one architecture does not decide for another's package.
    const perArch = [
      { fixed_version: '0:1.0-5', arches: ['x86_64'] },
      { fixed_version: '0:1.0-3', arches: ['i686'] },
    ];
    expect(match(perArch, at('1.0-4', ['i686']))).toBeUndefined();
    expect(match(perArch, at('1.0-4', ['x86_64']))?.fixed_version).toBe('0:1.0-5');
    expect(match(perArch, at('1.0-2', ['i686', 'x86_64']))?.fixed_version).toBe('0:1.0-5');
    // pixman, CBL-Mariner 1.0: fixed in 0.36.0-3, and affected through 0.40.0-3 with no patch: no fix decides.
    const pixman = [{ fixed_version: '0:0.36.0-3.cm1' }, { fixed_version: null, affected_through: '0:0.40.0-3.cm1' }];
    expect(match(pixman, at('0.35.0-1.cm1'))?.fixed_version).toBeNull();
    expect(match(pixman, at('0.40.0-4.cm1'))).toBeUndefined();
    // Between two unfixed entries, the state that reports more.
    const unfixed = [{ fixed_version: null, fix_state: 'will_not_fix' }, { fixed_version: null }];
    expect(match(unfixed, at('1'))?.fix_state).toBeUndefined();
  });

  it('chooses the advisory namespace of a layer, its rebuild target, or none for another format', () => {
    expect(MATCHING.advisoryNamespace('debian:12', 'dpkg')).toBe('debian:12');
    expect(MATCHING.advisoryNamespace('rocky:9', 'rpm')).toBe('rhel:9');
    expect(MATCHING.advisoryNamespace('debian:12', 'rpm')).toBeUndefined();
    expect(() => MATCHING.advisoryNamespace(null, 'rpm')).toThrow(
      /holds a rpm package database, but neither it nor its parents hold a release file/,
    );
    expect(MATCHING.namespaceFormat('photon:5.0')).toBe('rpm');
    expect(MATCHING.namespaceFormat('haiku:1')).toBeUndefined();
  });

  it('matches rpm packages by their source package where the advisories name those (Azure Linux), else by their own name', () => {
    const perlCarp = { name: 'perl-Carp', version: '1.54-506.azl3', source: { name: 'perl', version: '5.38.2-506.azl3' } };
    expect(MATCHING.bySource('azurelinux:3.0')?.(perlCarp)).toEqual({ name: 'perl', version: '5.38.2-506.azl3' });
    expect(MATCHING.bySource('mariner:2.0')?.(perlCarp)).toEqual({ name: 'perl', version: '5.38.2-506.azl3' });
    expect(MATCHING.bySource('azurelinux:3.0')?.({ name: 'gpg-key', version: '1-1' })).toEqual({ name: 'gpg-key', version: '1-1' });
    // Elsewhere, and without a namespace, packages are matched as they are.
    expect(MATCHING.bySource('rhel:9')).toBeUndefined();
    expect(MATCHING.bySource(null)).toBeUndefined();
  });
});
