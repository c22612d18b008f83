/**
 * The distribution catalog: its rows (catalog-rows.ts, data only) and the questions the code asks
 * of them. Adding a distribution is its folder (ecosystems/<name>/) and a row in DISTRIBUTIONS; a
 * source, its folder (whose updater.ts exports it in `sources`) and its row in SOURCE_CATALOG.
 */
import { APPLICATION_ECOSYSTEMS, DISTRIBUTIONS, SOURCE_CATALOG, type ApplicationEcosystem, type Distribution } from './catalog-rows.js';

export { APPLICATION_ECOSYSTEMS, DISTRIBUTIONS, SOURCE_CATALOG };
export type { ApplicationEcosystem, Distribution, ReleaseNaming, SourceEntry } from './catalog-rows.js';

/** Clair updaters no source here stands for: a Clair configuration may list them; they enable nothing. */
const CLAIR_UPDATERS_WITHOUT_SOURCE: readonly string[] = ['redhat_pypi', 'redhat_maven', 'redhat_npm'];

/**
 * The source an `updater.enabledupdaters` entry names, by its own name or a name Clair gives it;
 * null for a Clair updater without a source here; undefined for a name nobody gives a source.
 */
export function sourceNamed(name: string): string | null | undefined {
  const source = SOURCE_CATALOG.find((s) => s.name === name || s.clairNames?.includes(name));
  if (source) return source.name;
  return CLAIR_UPDATERS_WITHOUT_SOURCE.includes(name) ? null : undefined;
}

/**
 * The sources whose data is not vulnerability data (enrichment, risk context): their records and
 * runs never make a namespace's data known or fresh. Any other writer's records are (the API's).
 */
export const NOT_VULNERABILITY_DATA: readonly string[] = SOURCE_CATALOG.filter((s) => s.kind !== 'vulnerabilities').map((s) => s.name);

const BY_ID = new Map(DISTRIBUTIONS.map((d) => [d.id, d]));
const BY_OS_RELEASE_ID = new Map(DISTRIBUTIONS.flatMap((d) => d.osReleaseIds.map((id) => [id, d] as const)));

/** The distribution of a namespace (`debian:12` → Debian's row); undefined for one Tarsier does not know. */
export function distributionOf(namespace: string): Distribution | undefined {
  return BY_ID.get(namespace.split(':', 1)[0] ?? '');
}

/**
 * A namespace without the product sold on top of its release (`sles:15.4-ltss` → `sles:15.4`),
 * for a distribution whose namespaces carry one (productVariants); any other namespace as it is.
 */
export function withoutProductVariant(namespace: string): string {
  if (distributionOf(namespace)?.productVariants !== true) return namespace;
  const dash = namespace.indexOf('-', namespace.indexOf(':'));
  return dash > 0 ? namespace.slice(0, dash) : namespace;
}

/**
 * The sources that write a namespace's advisories: its distribution's (or application ecosystem's)
 * source and any alternative feed of it (rhel-vex for rhel); none for a distribution no source
 * covers yet (Fedora).
 */
export function sourcesOfNamespace(namespace: string): string[] {
  const source = (distributionOf(namespace) ?? ecosystemOf(namespace))?.source;
  if (source === undefined) return [];
  return [source, ...SOURCE_CATALOG.filter((s) => s.alternativeTo === source).map((s) => s.name)];
}

/** The distribution an os-release ID names. */
export const distributionWithOsReleaseId = (id: string): Distribution | undefined => BY_OS_RELEASE_ID.get(id);

const ECOSYSTEMS_BY_NAMESPACE = new Map(APPLICATION_ECOSYSTEMS.map((e) => [e.namespace, e]));
const ECOSYSTEMS_BY_OSV_NAME = new Map(APPLICATION_ECOSYSTEMS.map((e) => [e.osvName, e]));

/** The application ecosystem whose namespace this is (`npm`); undefined for any other namespace. */
export const ecosystemOf = (namespace: string): ApplicationEcosystem | undefined => ECOSYSTEMS_BY_NAMESPACE.get(namespace);

/** An application ecosystem's row, for code written for it (its lister): a catalog without it is a programming error, found at start-up. */
export function ecosystemRow(namespace: string): ApplicationEcosystem {
  const row = ecosystemOf(namespace);
  if (row === undefined) throw new Error(`the catalog has no ${namespace} application ecosystem`);
  return row;
}

/** The application ecosystem OSV names so (`PyPI`, `crates.io`). */
export const ecosystemWithOsvName = (osvName: string): ApplicationEcosystem | undefined => ECOSYSTEMS_BY_OSV_NAME.get(osvName);

/** A package's name as its ecosystem matches it: `Django_Foo` is `django-foo` on PyPI. */
export function ecosystemPackageName(ecosystem: ApplicationEcosystem, name: string): string {
  switch (ecosystem.packageNames) {
    case 'as-written':
      return name;
    case 'lower-case':
      return name.toLowerCase();
    case 'pep503':
      return name.toLowerCase().replace(/[-_.]+/g, '-');
  }
}
