/**
 * The answer key of the OSV fixtures (test/fixtures/feeds/osv/EXPECTED.md, worked out by hand) as
 * data: for a package version, the ids of the fixture records whose ranges include it, sorted. Read
 * by the record parser's test and by the end-to-end scans of an SBOM holding these versions.
 */

/** [namespace, package, version, records]. */
export type AnswerRow = readonly [string, string, string, readonly string[]];

export const GO_NET_MATCHES = [
  'GO-2022-0288',
  'GO-2022-0969',
  'GO-2022-1144',
  'GO-2023-1571',
  'GO-2023-1988',
  'GO-2023-2102',
  'GO-2024-2687',
  'GO-2024-3333',
  'GO-2025-3503',
  'GO-2025-3595',
  'GO-2026-4440',
  'GO-2026-4441',
  'GO-2026-4918',
  'GO-2026-5025',
  'GO-2026-5026',
  'GO-2026-5027',
  'GO-2026-5028',
  'GO-2026-5029',
  'GO-2026-5030',
  'GO-2026-5942',
];

/** The seven versions the fixtures were chosen for. */
export const SEVEN_VERSIONS: readonly AnswerRow[] = [
  ['npm', 'lodash', '4.17.15', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-p6mc-m468-83gw']],
  ['npm', 'minimist', '1.2.0', ['GHSA-vh95-rmgr-6w4m', 'GHSA-xvch-5gv4-984h']],
  ['pypi', 'urllib3', '1.26.12', ['GHSA-34jh-p97f-mpxf', 'GHSA-g4mx-q9vg-27p4', 'GHSA-v845-jxx5-vc9f']],
  [
    'maven',
    'com.fasterxml.jackson.core:jackson-databind',
    '2.9.10.1',
    ['GHSA-4w82-r329-3q67', 'GHSA-57j2-w4cx-62h2', 'GHSA-58pp-9c76-5625', 'GHSA-jjjh-jjxp-wpff', 'GHSA-rgv9-q543-rqg4'],
  ],
  ['go', 'golang.org/x/net', 'v0.0.0-20211112202133-69e39bad7dc2', GO_NET_MATCHES],
  ['rubygems', 'rack', '2.2.3', ['GHSA-22f2-v57c-j9cx', 'GHSA-54rr-7fvw-6x8f', 'GHSA-65f5-mfpf-vfhj', 'GHSA-wq4h-7r42-5hrr']],
  ['crates.io', 'regex', '1.5.4', ['RUSTSEC-2022-0013']],
];

/** Versions on both sides of the records' range boundaries. */
export const BOUNDARY_VERSIONS: readonly AnswerRow[] = [
  // lodash: the lodash entry ends at 4.17.19, lodash-es's (in the same record) at 4.17.20.
  ['npm', 'lodash', '3.6.0', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm']],
  ['npm', 'lodash', '4.17.18', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-p6mc-m468-83gw']],
  ['npm', 'lodash', '4.17.19', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm']],
  ['npm', 'lodash', '4.17.21', []],
  ['npm', 'lodash-es', '4.17.19', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm', 'GHSA-p6mc-m468-83gw']],
  ['npm', 'lodash-es', '4.17.20', ['GHSA-29mw-wpgm-hmr9', 'GHSA-35jh-r3h4-6jhm']],
  ['npm', 'lodash-es', '4.17.21', []],
  // last_affected: the bound itself is affected.
  ['npm', 'lodash.pick', '4.4.0', ['GHSA-p6mc-m468-83gw']],
  ['npm', 'lodash.pick', '4.4.1', []],
  ['npm', 'lodash.pick', '3.9.0', []],
  // minimist: two ranges per record.
  ['npm', 'minimist', '0.2.1', ['GHSA-xvch-5gv4-984h']],
  ['npm', 'minimist', '0.2.4', []],
  ['npm', 'minimist', '1.2.2', ['GHSA-vh95-rmgr-6w4m', 'GHSA-xvch-5gv4-984h']],
  ['npm', 'minimist', '1.2.3', ['GHSA-xvch-5gv4-984h']],
  ['npm', 'minimist', '1.2.6', []],
  ['pypi', 'urllib3', '1.26.17', ['GHSA-34jh-p97f-mpxf', 'GHSA-g4mx-q9vg-27p4']],
  ['pypi', 'urllib3', '1.26.19', []],
  ['pypi', 'urllib3', '1.25.4', ['GHSA-34jh-p97f-mpxf', 'GHSA-g4mx-q9vg-27p4', 'GHSA-q2q7-5pp4-w6pg', 'GHSA-v845-jxx5-vc9f']],
  // PyPI names are matched in their normal form.
  ['pypi', 'urllib3', '1.26.18', ['GHSA-34jh-p97f-mpxf']],
  [
    'maven',
    'com.fasterxml.jackson.core:jackson-databind',
    '2.9.10',
    [
      'GHSA-4w82-r329-3q67',
      'GHSA-57j2-w4cx-62h2',
      'GHSA-58pp-9c76-5625',
      'GHSA-jjjh-jjxp-wpff',
      'GHSA-mx7p-6679-8g3q',
      'GHSA-rgv9-q543-rqg4',
    ],
  ],
  [
    'maven',
    'com.fasterxml.jackson.core:jackson-databind',
    '2.4.0-rc1',
    ['GHSA-4w82-r329-3q67', 'GHSA-57j2-w4cx-62h2', 'GHSA-jjjh-jjxp-wpff', 'GHSA-mx7p-6679-8g3q'],
  ],
  ['maven', 'com.fasterxml.jackson.core:jackson-databind', '2.13.4', ['GHSA-jjjh-jjxp-wpff']],
  ['maven', 'com.fasterxml.jackson.core:jackson-databind', '2.13.4.2', []],
  ['go', 'golang.org/x/net', 'v0.55.0', ['GO-2026-5942']],
  ['go', 'golang.org/x/net', 'v0.56.0', []],
  [
    'go',
    'golang.org/x/net',
    'v0.50.0',
    // Fixed at 0.53.0 and later, and GO-2026-4559's [0.50.0, 0.51.0).
    ['GO-2026-4559', ...GO_NET_MATCHES.slice(GO_NET_MATCHES.indexOf('GO-2026-4918'))],
  ],
  ['go', 'stdlib', '1.20.4', ['GO-2023-1840', 'GO-2023-2102', 'GO-2024-2687', 'GO-2025-3503', 'GO-2026-4918', 'GO-2026-5026']],
  ['go', 'stdlib', '1.20.5', ['GO-2023-2102', 'GO-2024-2687', 'GO-2025-3503', 'GO-2026-4918', 'GO-2026-5026']],
  // A toolchain's own spelling of the same release.
  ['go', 'stdlib', 'go1.20.4', ['GO-2023-1840', 'GO-2023-2102', 'GO-2024-2687', 'GO-2025-3503', 'GO-2026-4918', 'GO-2026-5026']],
  ['rubygems', 'rack', '2.2.3.1', ['GHSA-22f2-v57c-j9cx', 'GHSA-54rr-7fvw-6x8f', 'GHSA-65f5-mfpf-vfhj']],
  ['rubygems', 'rack', '2.2.8', ['GHSA-22f2-v57c-j9cx', 'GHSA-54rr-7fvw-6x8f']],
  ['rubygems', 'rack', '2.2.8.1', []],
  ['crates.io', 'regex', '1.5.5', []],
  // Withdrawn: nothing, whatever the version.
  ['go', 'k8s.io/kubernetes', 'v1.20.0', []],
];
