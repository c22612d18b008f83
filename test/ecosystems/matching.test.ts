/** The matching rules the store links with: the affects rule and the advisory namespace of a layer's packages. */
import { describe, expect, it } from 'vitest';
import { MATCHING } from '../../src/ecosystems/matching.js';

describe('the matching rules', () => {
  it('a fix leaves older versions affected, a missing fix every version, a not_affected entry none', () => {
    const dpkg = MATCHING.affects('dpkg');
    expect(dpkg({ fixed_version: '1.2-3+deb12u1' }, '1.2-3')).toBe(true);
    expect(dpkg({ fixed_version: '1.2-3+deb12u1' }, '1.2-3+deb12u1')).toBe(false);
    expect(dpkg({ fixed_version: '1:0.9' }, '1.5')).toBe(true); // the epoch wins
    expect(dpkg({ fixed_version: null }, '99')).toBe(true);
    expect(dpkg({ fixed_version: null, fix_state: 'will_not_fix' }, '99')).toBe(true);
    expect(dpkg({ fixed_version: null, fix_state: 'not_affected' }, '1.0')).toBe(false);
    expect(MATCHING.affects('rpm')({ fixed_version: '0:2.6.7-3.azl3' }, '2.6.7-2.azl3')).toBe(true);
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
