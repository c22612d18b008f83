import type { ScanReport } from '../report.js';
import { cyclonedxReport } from './cyclonedx.js';
import { sarifReport } from './sarif.js';
import { tableReport } from './table.js';

/** The values of `tarsier scan --format`. */
export const OUTPUT_FORMATS = ['table', 'json', 'sarif', 'cyclonedx'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The report as the format writes it, ending with a newline. color applies to the table only. */
export function formatReport(report: ScanReport, format: OutputFormat, options: { color: boolean }): string {
  switch (format) {
    case 'table':
      return tableReport(report, options);
    case 'json':
      return json(report);
    case 'sarif':
      return json(sarifReport(report));
    case 'cyclonedx':
      return json(cyclonedxReport(report));
  }
}

function json(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
