import { riskMetadata } from '../../model/risk.js';
import { NO_FIX, statedFixState, type FixedIn, type StatedFixState } from '../../model/vulnerability.js';
import type { AffectingVulnerability, LayerFeature } from '../../store/layers.js';
import type { NamespaceRow, StoredVulnerability } from '../../vulndb.js';
import type { Static } from '@sinclair/typebox';
import type { FeatureOutput, NamespaceList, VulnerabilityOutput } from './schemas.js';

/**
 * Revision A and B of the v1 wire format. They differ only in how namespaces are written:
 * A: `Namespace` (string) on objects and namespace lists of strings;
 * B: `NamespaceName` on objects and lists of {Name, VersionFormat}.
 * Empty strings and absent optional values are omitted, as Clair's omitempty did; lists are [].
 */
export type Revision = 'A' | 'B';

const namespaceKey = (revision: Revision): 'Namespace' | 'NamespaceName' => (revision === 'A' ? 'Namespace' : 'NamespaceName');

function withoutEmpty<T>(fields: Record<string, unknown>): T {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== '')) as T;
}

export function namespaces(rows: readonly NamespaceRow[], revision: Revision): Static<typeof NamespaceList>['Namespaces'] {
  return rows.map((ns) => (revision === 'A' ? ns.name : { Name: ns.name, VersionFormat: ns.versionFormat }));
}

export interface VulnerabilityView {
  /** Include FixedIn (GET ?fixedIn, writes, notifications). */
  fixedIn?: boolean;
  /** FixedBy for a vulnerability nested in a layer feature; null = no fix (omitted). */
  fixedBy?: string | null;
  /** The namespace's version format, written on FixedIn features in revision B. */
  versionFormat?: string;
  /** The stated fix states of the features shown (a feature nested in a layer report): Metadata.FixStates. */
  fixStates?: Readonly<Record<string, StatedFixState>>;
}

/**
 * Metadata with FixStates: `{"<feature>": "will_not_fix" | "fix_deferred" | "not_affected"}`
 * for the features whose state is more than fixed or affected. v1's shape is unchanged (an unfixed
 * state still has no FixedBy); clients that do not know the key ignore it.
 */
function withFixStates(
  metadata: Record<string, unknown> | undefined,
  states: Readonly<Record<string, StatedFixState>>,
): Record<string, unknown> | undefined {
  return Object.keys(states).length === 0 ? metadata : { ...metadata, FixStates: states };
}

/** The stated fix states of a fixed-in list, by feature. */
function fixStatesOf(fixedIn: readonly FixedIn[]): Record<string, StatedFixState> {
  const states: Record<string, StatedFixState> = {};
  for (const f of fixedIn) {
    const state = statedFixState(f);
    if (state !== null) states[f.feature] = state;
  }
  return states;
}

/** What the Vulnerability object shows: a stored vulnerability, or one nested in a layer report (no fixed-in list). */
type ShownVulnerability = Pick<StoredVulnerability, 'name' | 'namespace' | 'description' | 'link' | 'severity' | 'metadata'> &
  Partial<Pick<StoredVulnerability, 'fixedIn' | 'risk'>>;

export function vulnerability(v: ShownVulnerability, revision: Revision, view: VulnerabilityView = {}): Static<typeof VulnerabilityOutput> {
  const own = { ...v.metadata, ...riskMetadata(v.name, v.risk) };
  const metadata = withFixStates(Object.keys(own).length > 0 ? own : undefined, view.fixStates ?? fixStatesOf(v.fixedIn ?? []));
  return withoutEmpty<Static<typeof VulnerabilityOutput>>({
    Name: v.name,
    [namespaceKey(revision)]: v.namespace,
    Description: v.description,
    Link: v.link,
    Severity: v.severity,
    Metadata: metadata,
    FixedBy: view.fixedBy ?? undefined,
    FixedIn: view.fixedIn ? (v.fixedIn ?? []).map((f) => fixedInFeature(f, v.namespace, revision, view.versionFormat)) : undefined,
  });
}

export function fixedInFeature(
  fix: FixedIn,
  namespace: string,
  revision: Revision,
  format: string | undefined,
): Static<typeof FeatureOutput> {
  return withoutEmpty<Static<typeof FeatureOutput>>({
    Name: fix.feature,
    [namespaceKey(revision)]: namespace,
    VersionFormat: revision === 'B' ? format : undefined,
    Version: fix.version ?? NO_FIX,
  });
}

/**
 * One feature of a layer report as the JSON text around its AddedBy, which differs between images
 * while the rest is the same wherever the feature version is installed: `{"Name":…,"Version":"…"`
 * (head) and `,"Vulnerabilities":[…]}` (tail; `}` without vulnerabilities). Each vulnerability has
 * FixedBy, omitted when no fix exists. head + `,"AddedBy":…` + tail is the feature's object.
 */
export function featureFragment(
  feature: LayerFeature,
  vulnerabilities: readonly AffectingVulnerability[],
  revision: Revision,
  withVulnerabilities: boolean,
): { head: string; tail: string } {
  const fields = JSON.stringify(
    withoutEmpty({
      Name: feature.name,
      [namespaceKey(revision)]: feature.namespace,
      VersionFormat: revision === 'B' ? feature.versionFormat : undefined,
      Version: feature.version,
    }),
  );
  const tail = withVulnerabilities
    ? `,"Vulnerabilities":${JSON.stringify(
        vulnerabilities.map((v) => {
          const stated = statedFixState({ version: v.fixedBy, state: v.fixState });
          return vulnerability(v, revision, { fixedBy: v.fixedBy, fixStates: stated ? { [feature.name]: stated } : {} });
        }),
      )}}`
    : '}';
  return { head: fields.slice(0, -1), tail };
}
