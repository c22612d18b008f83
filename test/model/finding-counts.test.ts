/** The counting rule of an image's findings, on findings in memory (no store). */
import { describe, expect, it } from 'vitest';
import { allSeverities, countFindings, worstSeverity, type CountedFinding } from '../../src/model/finding-counts.js';

const kev = { kev: { cve: 'CVE-2099-0003' } };
const finding = (name: string, severity: CountedFinding['severity'], fixedBy: string | null, risk: CountedFinding['risk'] = {}) => ({
  name,
  severity,
  fixedBy,
  risk,
});

describe('countFindings', () => {
  it('counts each vulnerability once by name, at its highest severity, fixable when any package has a fix, KEV when listed', () => {
    const counts = countFindings([
      // Two sources, two packages: counted once, at Critical, fixable by the openssl upgrade.
      finding('CVE-2099-0001', 'High', '3.0.11-1'),
      finding('CVE-2099-0001', 'Critical', null),
      // No version fixes it (will not be fixed, deferred or no fix yet): not fixable.
      finding('CVE-2099-0002', 'Low', null),
      // Known exploited, on one of its packages only: the vulnerability is.
      finding('CVE-2099-0003', 'Medium', null),
      finding('CVE-2099-0003', 'Medium', '1.3-1', kev),
      finding('DSA-0004', 'Unknown', null, { kev: undefined }),
    ]);
    expect(counts).toEqual({
      bySeverity: {
        Critical: { total: 1, fixable: 1 },
        Low: { total: 1, fixable: 0 },
        Medium: { total: 1, fixable: 1 },
        Unknown: { total: 1, fixable: 0 },
      },
      knownExploited: 1,
    });
    expect(allSeverities(counts)).toEqual({ total: 4, fixable: 2 });
    expect(worstSeverity(counts)).toBe('Critical');
  });

  it('lists severities in the order their first vulnerability comes (outputs keep their order)', () => {
    const counts = countFindings([finding('B', 'Low', null), finding('A', 'High', null), finding('B', 'Medium', null)]);
    expect(Object.keys(counts.bySeverity)).toEqual(['Medium', 'High']);
  });

  it('counts nothing as nothing', () => {
    const counts = countFindings([]);
    expect(counts).toEqual({ bySeverity: {}, knownExploited: 0 });
    expect(allSeverities(counts)).toEqual({ total: 0, fixable: 0 });
    expect(worstSeverity(counts)).toBeUndefined();
  });
});
