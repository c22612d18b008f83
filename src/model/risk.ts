/**
 * Risk context: how likely a CVE is to be exploited (FIRST's EPSS) and whether it is known to be
 * (CISA's KEV catalog). Kept per CVE in tables of their own and joined to vulnerabilities when they
 * are read, never merged into them: EPSS moves every day for almost every CVE, and merged it would
 * make a new version (and a notification) of nearly every vulnerability daily.
 */

/** One EPSS row: the probability of exploitation in the next 30 days, and its rank among all CVEs. */
export interface EpssScore {
  readonly cve: string;
  /** 0..1. */
  readonly score: number;
  /** 0..1: the share of scored CVEs with a lower or equal score. */
  readonly percentile: number;
}

/** One file of EPSS scores: the day they were scored (YYYY-MM-DD, from the file's first line) and its rows, streamed. */
export interface EpssFile {
  readonly kind: 'epss';
  readonly date: string;
  readonly modelVersion: string;
  readonly scores: AsyncIterable<EpssScore>;
}

/** One entry of CISA's Known Exploited Vulnerabilities catalog. Dates are YYYY-MM-DD. */
export interface KevEntry {
  readonly cve: string;
  readonly vendorProject: string;
  readonly product: string;
  readonly vulnerabilityName: string;
  readonly dateAdded: string;
  readonly dueDate: string;
  /** `Known` or `Unknown`, as CISA writes it. */
  readonly knownRansomwareCampaignUse: string;
  readonly requiredAction: string;
}

/** The whole KEV catalog. */
export interface KevCatalog {
  readonly kind: 'kev';
  readonly catalogVersion: string;
  readonly entries: readonly KevEntry[];
}

/** What a risk-context source parses to: it replaces that source's table whole. */
export type RiskData = EpssFile | KevCatalog;

/**
 * The risk context of one vulnerability, from the CVE ids it stands for (its own name, or the CVEs
 * an advisory lists): the highest EPSS score among them and the earliest KEV entry, each with the
 * CVE it came from.
 */
export interface RiskContext {
  readonly epss?: { readonly cve: string; readonly score: number; readonly percentile: number; readonly date: string };
  readonly kev?: {
    readonly cve: string;
    readonly dateAdded: string;
    readonly dueDate: string;
    readonly knownRansomwareCampaignUse: string;
  };
}

/** A change of a vulnerability's KEV entry that a notification reports (notifier.onenrichment). */
export interface RiskChange {
  readonly kev: { readonly old: RiskContext['kev'] | null; readonly new: RiskContext['kev'] | null };
}

/**
 * The risk context as the metadata keys the APIs add beside the source's:
 * `EPSS: {Score, Percentile, Date}` and `KEV: {DateAdded, DueDate, KnownRansomwareCampaignUse}`,
 * each with `CVE` when it came from a CVE an advisory lists rather than from the vulnerability's
 * own name. Clients that do not know the keys ignore them.
 */
export function riskMetadata(name: string, risk: RiskContext | undefined): Record<string, unknown> {
  const from = (cve: string) => (cve === name ? {} : { CVE: cve });
  return {
    ...(risk?.epss
      ? { EPSS: { Score: risk.epss.score, Percentile: risk.epss.percentile, Date: risk.epss.date, ...from(risk.epss.cve) } }
      : {}),
    ...(risk?.kev
      ? {
          KEV: {
            DateAdded: risk.kev.dateAdded,
            DueDate: risk.kev.dueDate,
            KnownRansomwareCampaignUse: risk.kev.knownRansomwareCampaignUse,
            ...from(risk.kev.cve),
          },
        }
      : {}),
  };
}

/** The context a notification's side shows: for a KEV change, its old or new entry; else the current context. */
export function riskOnSide(current: RiskContext | undefined, change: RiskChange | null, side: 'old' | 'new'): RiskContext | undefined {
  if (!change) return current;
  const kev = change.kev[side];
  const { kev: _current, ...rest } = current ?? {};
  return kev ? { ...rest, kev } : rest;
}
