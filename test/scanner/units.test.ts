/** The scanner's small decisions: package URLs, the ignore file's rules, the data age line. */
import { describe, expect, it } from 'vitest';
import { ScanError } from '../../src/scanner/backend.js';
import { dataAgeLine } from '../../src/scanner/command.js';
import { ignoreEntryFor, parseIgnoreFile } from '../../src/scanner/ignore.js';
import { packageUrl } from '../../src/scanner/purl.js';

describe('package URLs', () => {
  it.each([
    [
      { name: 'openssl', version: '1.1.1n-0+deb10u3', namespace: 'debian:10', versionFormat: 'dpkg' },
      'pkg:deb/debian/openssl@1.1.1n-0%2Bdeb10u3?distro=debian-10',
    ],
    [
      { name: 'perl', version: '1:5.28.1-6', namespace: 'ubuntu:18.04', versionFormat: 'dpkg' },
      'pkg:deb/ubuntu/perl@1%3A5.28.1-6?distro=ubuntu-18.04',
    ],
    [
      { name: 'musl', version: '1.2.4-r0', namespace: 'alpine:v3.18', versionFormat: 'apk' },
      'pkg:apk/alpine/musl@1.2.4-r0?distro=alpine-3.18',
    ],
    [{ name: 'glibc', version: '2.39-r1', namespace: 'wolfi:rolling', versionFormat: 'apk' }, 'pkg:apk/wolfi/glibc@2.39-r1'],
    [
      { name: 'bash', version: '4.4.20-4.el8_6', namespace: 'rhel:8', versionFormat: 'rpm' },
      'pkg:rpm/redhat/bash@4.4.20-4.el8_6?distro=rhel-8',
    ],
    [
      { name: 'bash', version: '5.2.15-1.amzn2023.0.2', namespace: 'amzn:2023', versionFormat: 'rpm' },
      'pkg:rpm/amazon/bash@5.2.15-1.amzn2023.0.2?distro=amzn-2023',
    ],
    [
      { name: 'libstdc++', version: '8.5.0-10.0.1.el8', namespace: 'oracle:8', versionFormat: 'rpm' },
      'pkg:rpm/oracle/libstdc%2B%2B@8.5.0-10.0.1.el8?distro=ol-8',
    ],
  ])('%o is %s', (pkg, purl) => expect(packageUrl(pkg)).toBe(purl));
});

describe('the ignore file', () => {
  const now = new Date('2026-11-24T12:00:00Z');

  it('applies an entry through the whole of its expires day (UTC), and not after', () => {
    const entries = parseIgnoreFile('- id: CVE-1\n  expires: 2026-11-24\n- id: CVE-2\n  expires: "2026-11-24T11:00:00Z"\n', 'f');
    expect(ignoreEntryFor(entries, { id: 'CVE-1', packageName: 'a' }, now)?.id).toBe('CVE-1');
    expect(ignoreEntryFor(entries, { id: 'CVE-1', packageName: 'a' }, new Date('2026-11-25T00:00:00Z'))).toBeUndefined();
    expect(ignoreEntryFor(entries, { id: 'CVE-2', packageName: 'a' }, now)).toBeUndefined();
  });

  it('matches ids in any case, and a package only when given', () => {
    const entries = parseIgnoreFile('- id: cve-2024-1\n  package: zlib\n- {id: CVE-2024-2}\n', 'f');
    expect(ignoreEntryFor(entries, { id: 'CVE-2024-1', packageName: 'zlib' }, now)).toBeDefined();
    expect(ignoreEntryFor(entries, { id: 'CVE-2024-1', packageName: 'openssl' }, now)).toBeUndefined();
    expect(ignoreEntryFor(entries, { id: 'CVE-2024-2', packageName: 'anything' }, now)).toBeDefined();
  });

  it('refuses what it cannot read, naming the entry: a mistake must not silently ignore nothing', () => {
    expect(parseIgnoreFile('', 'f')).toEqual([]);
    for (const [text, message] of [
      ['id: CVE-1', /must be a YAML list/],
      ['- CVE-1', /entry 1 is not a mapping/],
      ['- package: zlib', /entry 1 has no id/],
      ['- id: CVE-1\n  expires: next week', /expires must be an ISO date/],
      ['- id: CVE-1\n  expires: 2026-02-30x', /expires must be an ISO date/],
      ['- id: CVE-1\n  reasons: typo', /unknown fields \(reasons\)/],
      ['- id: [a, b]', /id must be a non-empty string/],
      ['- id: CVE-1\n  bad: [', /is not YAML/],
    ] as const) {
      expect(() => parseIgnoreFile(text, 'ignore.yaml'), text).toThrow(ScanError);
      expect(() => parseIgnoreFile(text, 'ignore.yaml'), text).toThrow(message);
    }
  });
});

describe('the data age line', () => {
  const now = new Date('2026-11-24T12:00:00Z');
  it.each([
    [null, 'vulnerability data: never updated'],
    ['2026-11-24T11:30:00.000Z', 'vulnerability data: updated 2026-11-24T11:30:00.000Z (less than an hour ago)'],
    ['2026-11-24T10:30:00.000Z', 'vulnerability data: updated 2026-11-24T10:30:00.000Z (1 hour ago)'],
    ['2026-11-23T12:00:00.000Z', 'vulnerability data: updated 2026-11-23T12:00:00.000Z (24 hours ago)'],
    ['2026-11-14T12:00:00.000Z', 'vulnerability data: updated 2026-11-14T12:00:00.000Z (10 days ago)'],
  ])('%s', (at, line) => expect(dataAgeLine(at === null ? null : new Date(at), now)).toBe(line));
});
