import { NESTED, type ApplicationFindings, type FileLister } from '../../model/indexing.js';
import { zipEntries, type ZipLimits } from '../../zip.js';
import { ecosystemPackageName, ecosystemRow } from '../catalog.js';
import { parseManifest, parseProperties } from './metadata.js';

/**
 * Lists the Maven packages in a layer's Java archives (`.jar`, `.war`, `.ear`, and Jenkins'
 * `.jpi`/`.hpi` plugins, which are jars), and in the archives nested in them.
 *
 * What an archive is, in order of trust:
 * 1. Every `META-INF/maven/<groupId>/<artifactId>/pom.properties` it holds: Maven's archiver
 *    writes one for the artifact it builds, and a shaded or uber jar keeps one for each artifact
 *    folded into it, so each is a package (`groupId:artifactId`, `version`, from the file's keys;
 *    the folder names stand in for a missing groupId or artifactId key). These are the names and
 *    versions OSV's Maven records use.
 * 2. Without any, its manifest, and 3. without a version there, its file name: see
 *    `fallbackPackage`, whose names are right less often, and say so.
 *
 * Nested archives (a Spring Boot jar's `BOOT-INF/lib/*.jar`, a WAR's `WEB-INF/lib/*.jar`, an
 * EAR's modules, and any other entry with an archive's name) are read the same way, down to
 * MAX_NESTING levels. Their packages are located by the path of archives that leads to them
 * (NESTED): `app/app.jar!/BOOT-INF/lib/jackson-databind-2.15.2.jar`.
 *
 * A hostile or broken archive gets a bounded answer: zipEntries refuses an archive of more than
 * ZIP_LIMITS.maxEntries entries and an entry declared larger than ZIP_LIMITS.maxEntryBytes (a
 * deflated run of zeros) before inflating it, and everything one layer archive expands to, its
 * nested archives included, is held to EXPANSION_BUDGET (overlapping entries, many nested bombs
 * each under the entry limit). A refusal is reported with the location it concerns and why; the
 * packages found before it, and in the layer's other archives, are still listed.
 */

/** The archives read, by the end of their names (lower-cased). */
const ARCHIVE_SUFFIXES = ['.jar', '.war', '.ear', '.jpi', '.hpi'];

/** Levels of archives inside a layer archive read; a Spring Boot WAR in an EAR is two. */
export const MAX_NESTING = 3;

/**
 * Each archive's own limits. 65,535 entries is what a zip holds without its zip64 extension, which
 * only the largest jars need (so those few are refused, and said to be); 64 MiB is more than a
 * class, a resource or a nested library jar usually inflates to.
 */
export const ZIP_LIMITS: ZipLimits = { maxEntries: 65_535, maxEntryBytes: 64 * 1024 * 1024 };

/**
 * What one layer archive may expand to in all, its nested archives' entries included. zipEntries
 * inflates every entry, so a 100 MB fat jar costs its full inflated size (typically 2–3 times) here.
 */
export const EXPANSION_BUDGET = { bytes: 1024 * 1024 * 1024, entries: 250_000 };

const POM_PROPERTIES = /^META-INF\/maven\/([^/]+)\/([^/]+)\/pom\.properties$/;
const MANIFEST = 'META-INF/MANIFEST.MF';

const MAVEN = ecosystemRow('maven');

function isArchive(path: string): boolean {
  const lower = path.toLowerCase();
  return ARCHIVE_SUFFIXES.some((suffix) => lower.endsWith(suffix));
}

/** What the layer archive being read has expanded to so far. */
interface Expansion {
  bytes: number;
  entries: number;
}

/** Spent when a layer archive, with its nested archives, expands past EXPANSION_BUDGET. */
class BudgetSpent extends Error {}

type Identity = { name: string; version: string };

/**
 * One archive's packages, then its nested archives' (read as they come, so that at most one
 * archive per level is held in memory). A broken nested archive is reported at its own location
 * and its parent read on; BudgetSpent ends the whole layer archive.
 */
async function readArchive(
  location: string,
  content: Buffer,
  nesting: number,
  spent: Expansion,
  found: ApplicationFindings,
): Promise<void> {
  const poms: Identity[] = [];
  let manifest: Buffer | undefined;
  let complete = false;
  try {
    for await (const entry of zipEntries(content, ZIP_LIMITS)) {
      spent.entries += 1;
      spent.bytes += entry.data.length;
      if (spent.entries > EXPANSION_BUDGET.entries || spent.bytes > EXPANSION_BUDGET.bytes)
        throw new BudgetSpent(
          `expands to more than ${EXPANSION_BUDGET.bytes} bytes or ${EXPANSION_BUDGET.entries} entries with its nested archives (reached in ${location}); the packages found before are listed`,
        );
      const pom = POM_PROPERTIES.exec(entry.name);
      if (pom) {
        const identity = pomIdentity(entry.data, pom[1] as string, pom[2] as string);
        if ('why' in identity) found.unreadable.push({ location, why: `${entry.name}: ${identity.why}` });
        else poms.push(identity);
      } else if (entry.name.toUpperCase() === MANIFEST) {
        manifest = entry.data;
      } else if (isArchive(entry.name)) {
        const inner = `${location}${NESTED}${entry.name}`;
        if (nesting >= MAX_NESTING) found.unreadable.push({ location: inner, why: `nested deeper than the ${MAX_NESTING} archives read` });
        else await readArchive(inner, entry.data, nesting + 1, spent, found);
      }
    }
    complete = true;
  } catch (err) {
    if (err instanceof BudgetSpent) throw err;
    found.unreadable.push({ location, why: `not read: ${(err as Error).message}` });
  } finally {
    // Whatever pom.properties were read are the archive's own; a fallback name is guessed only
    // from a whole archive, where no pom.properties can be among the entries left unread.
    const identities = poms.length > 0 || !complete ? poms : [fallbackPackage(manifest, location)].filter((p) => p !== undefined);
    for (const { name, version } of identities)
      found.packages.push({ ecosystem: MAVEN.namespace, name: ecosystemPackageName(MAVEN, name), version, location });
  }
}

/** The package a pom.properties names; the folder names stand in for missing groupId and artifactId keys. */
function pomIdentity(content: Buffer, folderGroup: string, folderArtifact: string): Identity | { why: string } {
  let properties: Map<string, string>;
  try {
    properties = parseProperties(content);
  } catch (err) {
    return { why: (err as Error).message };
  }
  const group = properties.get('groupId')?.trim() || folderGroup;
  const artifact = properties.get('artifactId')?.trim() || folderArtifact;
  const version = properties.get('version')?.trim();
  if (!version) return { why: 'no version' };
  // A placeholder left by a build that did not filter the file names no version anyone released.
  if (version.includes('${')) return { why: `version ${JSON.stringify(version)} is an unresolved property` };
  return { name: `${group}:${artifact}`, version };
}

/**
 * The last step of a location: the archive's file name without its folders and its suffix.
 */
function stemOf(location: string): string {
  const name = location.slice(location.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

/** Maven's file naming, `artifactId-version`: split at the first `-` before a digit. */
const FILE_NAME_VERSION = /^(.+?)-(\d.*)$/;
/** What a groupId or an artifactId looks like (no blanks, no `:`), as a human-readable title does not. */
const MAVEN_TOKEN = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * The package an archive without pom.properties is, guessed from its manifest and its file name
 * (a jar built by Gradle, Ant or a distribution's packaging), or undefined when neither gives a version.
 *
 * - Version: the manifest's `Implementation-Version`, else its `Bundle-Version` (OSGi's, which
 *   may add `.0` or write a qualifier after a dot: `1.2.0` for 1.2, the same version in Maven's
 *   order), else the file name's.
 * - artifactId: the file name's stem before `-<digit>` (Maven, Gradle and Spring Boot name the
 *   jars they copy `artifactId-version.jar`); when the name carries no version, a token-like
 *   `Implementation-Title`; else the stem as it is.
 * - groupId: only from `Bundle-SymbolicName`, when it is `<groupId>.<artifactId>` with that
 *   artifactId, which is maven-bundle-plugin's default for an artifactId that does not start
 *   with the group's last part (`com.fasterxml.jackson.core.jackson-databind`,
 *   `org.mongodb.bson`). The guess is wrong where the symbolic name is the groupId itself and the
 *   artifactId its last part (`com.google.guava` would read as `com.google:guava`), and it finds
 *   nothing for hand-written symbolic names (`org.apache.commons.logging` for
 *   commons-logging:commons-logging). `Implementation-Vendor-Id` is not used: Apache Commons
 *   sets it to `org.apache` for every component, a group none of them is in.
 * Without a groupId the name is the artifactId alone: OSV's Maven names are all
 * `groupId:artifactId`, so it matches no advisory and serves the inventory only. A wrong group
 * is a name no advisory uses either, so the guess costs a missed match, not an invented one,
 * unless it happens to name another real artifact.
 */
export function fallbackPackage(manifest: Buffer | undefined, location: string): Identity | undefined {
  const headers = manifest ? parseManifest(manifest) : new Map<string, string>();
  const stem = stemOf(location);
  const fromFileName = FILE_NAME_VERSION.exec(stem);
  const version = headers.get('implementation-version') || headers.get('bundle-version') || fromFileName?.[2];
  if (!version) return undefined;
  const title = headers.get('implementation-title');
  const artifact = fromFileName?.[1] ?? (title && MAVEN_TOKEN.test(title) ? title : stem);
  // Directives and attributes follow a `;` (`org.example.bundle;singleton:=true`).
  const symbolicName = headers.get('bundle-symbolicname')?.split(';')[0]?.trim();
  const group =
    symbolicName?.endsWith(`.${artifact}`) && symbolicName.length > artifact.length + 1
      ? symbolicName.slice(0, -artifact.length - 1)
      : undefined;
  return { name: group && MAVEN_TOKEN.test(group) ? `${group}:${artifact}` : artifact, version };
}

/**
 * One layer archive's packages, against its own budget, sorted (the same archive lists the same
 * way). The same package found twice at one location (an archive holding the same pom.properties
 * twice) is listed once.
 */
async function list(location: string, content: Buffer): Promise<ApplicationFindings> {
  const found: ApplicationFindings = { packages: [], unreadable: [] };
  try {
    await readArchive(location, content, 0, { bytes: 0, entries: 0 }, found);
  } catch (err) {
    if (!(err instanceof BudgetSpent)) throw err;
    found.unreadable.push({ location, why: err.message });
  }
  const seen = new Set<string>();
  const packages = found.packages
    .filter((p) => {
      const key = `${p.location}\0${p.name}\0${p.version}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => compare(a.location, b.location) || compare(a.name, b.name) || compare(a.version, b.version));
  return { packages, unreadable: found.unreadable };
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const javaArchiveLister = {
  name: 'java-archive',
  version: 1,
  considers: (path: string, _mode: number) => isArchive(path),
  // By name alone: a file named as a Java archive that is none is reported, not passed over.
  headBytes: 0,
  selects: () => true,
  list,
} satisfies FileLister;
