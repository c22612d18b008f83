import type { Static } from '@sinclair/typebox';
import { UNFIXED_WORDS } from '../model/vulnerability.js';
import type * as schema from './report-schema.js';

/**
 * The scan report: what `tarsier scan` found in one image, before it is written in a format (table,
 * JSON, SARIF, CycloneDX). The JSON format is this report as it is; its schema, defined in
 * report-schema.ts, is published as docs/scan-report.schema.json and versioned with
 * SCAN_REPORT_VERSION: a field is only ever added in a minor version, and renamed or removed in a
 * major one. 1.1 added each finding's epss and kev, knownExploited and gate.failOnKev; 1.2
 * database.namespaces; 1.3 SBOM targets (target.kind sbom, skipped, and packages without a layer);
 * 1.4 unread.
 */
export const SCAN_REPORT_VERSION = '1.4';

/** The report's parts, as its schema (report-schema.ts) defines them. */
export type ReportPackage = Static<typeof schema.ReportPackage>;
export type ReportCvss = Static<typeof schema.ReportCvss>;
export type ReportEpss = Static<typeof schema.ReportEpss>;
export type ReportKev = Static<typeof schema.ReportKev>;
export type ReportNamespace = Static<typeof schema.ReportNamespace>;
export type ReportSkipped = Static<typeof schema.ReportSkipped>;
export type ReportUnread = Static<typeof schema.ReportUnread>;
export type Finding = Static<typeof schema.Finding>;
export type IgnoredFinding = Static<typeof schema.IgnoredFinding>;
export type ScanReport = Static<typeof schema.ScanReport>;

/** How a finding's fix state reads in text: the version that fixes it, or why there is none. */
export function fixText(finding: Pick<Finding, 'fixedBy' | 'fixState'>): string {
  return finding.fixedBy ?? UNFIXED_WORDS[finding.fixState === 'fixed' ? 'affected' : finding.fixState];
}

/**
 * An EPSS score as text: the probability as a percentage and the percentile rounded down, e.g.
 * `94.3% (p99)`. A score too small for one decimal reads `<0.1%`, not a misleading 0.0%.
 */
export function epssText(epss: ReportEpss): string {
  const percent = epss.score * 100;
  const score = percent > 0 && percent < 0.05 ? '<0.1%' : `${percent.toFixed(1)}%`;
  // The epsilon keeps 0.29 (28.999… × 100 in floating point) at p29.
  return `${score} (p${Math.floor(epss.percentile * 100 + 1e-9)})`;
}
