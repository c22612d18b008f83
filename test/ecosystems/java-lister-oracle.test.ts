/**
 * The Java archive lister against Info-ZIP: every jar a Debian system ships under /usr/share/java
 * (the `lib*-java` packages, when installed) compared with its pom.properties as `unzip` extracts
 * them, and a Spring Boot jar and a WAR that Info-ZIP's `zip` builds from real jars (Debian's,
 * else the committed fixtures). Spawns unzip and zip, so it is not a unit test file.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { javaArchiveLister } from '../../src/ecosystems/maven/lister.js';
import { NESTED } from '../../src/model/indexing.js';
import { listEachFile } from '../helpers/file-listers.js';

const SYSTEM_JARS = '/usr/share/java';
const MAVEN_REPO = '/usr/share/maven-repo';
const FIXTURE_JARS = join(import.meta.dirname, '../fixtures/maven/jars');
const POM_PROPERTIES = /^META-INF\/maven\/[^/]+\/[^/]+\/pom\.properties$/;

const dir = mkdtempSync(join(tmpdir(), 'tarsier-java-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The jars of a directory, links left out (Debian links `name.jar` to `name-version.jar`). */
function jarsIn(directory: string): string[] {
  if (!existsSync(directory)) return [];
  return readdirSync(directory)
    .filter((name) => name.endsWith('.jar') && !lstatSync(join(directory, name)).isSymbolicLink())
    .sort();
}

const unzip = (...args: string[]) => execFileSync('unzip', args, { maxBuffer: 64 * 1024 * 1024 }).toString('latin1');

/**
 * What unzip finds in a jar's pom.properties, as name@version. Maven writes `key=value` lines and
 * `#` comments, so a line split at its first `=` or `:` reads them without the lister's parser.
 */
function oracleOf(jar: string): string[] {
  const known = oracles.get(jar);
  if (known) return known;
  const found = new Set<string>();
  for (const entry of unzip('-Z1', jar)
    .split('\n')
    .filter((name) => POM_PROPERTIES.test(name))) {
    const properties = new Map<string, string>();
    for (const line of unzip('-p', jar, entry).split(/\r?\n/)) {
      const match = /^\s*([^#!=:\s][^=:\s]*)\s*[=:]\s*(.*?)\s*$/.exec(line);
      if (match) properties.set(match[1] as string, match[2] as string);
    }
    found.add(`${properties.get('groupId')}:${properties.get('artifactId')}@${properties.get('version')}`);
  }
  const sorted = [...found].sort();
  oracles.set(jar, sorted);
  return sorted;
}

const oracles = new Map<string, string[]>();

/** groupId:artifactId of each jar Debian's maven-repo-helper links under /usr/share/maven-repo, by the jar's real path. */
function debianCoordinates(): Map<string, Set<string>> {
  const byJar = new Map<string, Set<string>>();
  if (!existsSync(MAVEN_REPO)) return byJar;
  for (const path of readdirSync(MAVEN_REPO, { recursive: true, encoding: 'utf8' })) {
    if (!path.endsWith('.jar')) continue;
    const parts = relative(MAVEN_REPO, join(MAVEN_REPO, path)).split('/');
    if (parts.length < 4) continue;
    const name = `${parts.slice(0, -3).join('.')}:${parts[parts.length - 3]}`;
    let target: string;
    try {
      target = realpathSync(join(MAVEN_REPO, path));
    } catch {
      continue;
    }
    if (!byJar.has(target)) byJar.set(target, new Set());
    byJar.get(target)?.add(name);
  }
  return byJar;
}

async function listedAt(files: Map<string, Buffer>) {
  const { packages, unreadable } = await listEachFile(javaArchiveLister, files);
  const at = new Map<string, string[]>();
  for (const p of packages) at.set(p.location, [...(at.get(p.location) ?? []), `${p.name}@${p.version}`].sort());
  return { at, unreadable };
}

const systemJars = jarsIn(SYSTEM_JARS);

describe('the Java archive lister against unzip', () => {
  it.skipIf(systemJars.length === 0)('lists exactly the pom.properties unzip finds in every jar under /usr/share/java', async () => {
    const files = new Map(systemJars.map((name) => [`usr/share/java/${name}`, readFileSync(join(SYSTEM_JARS, name))]));
    const { at, unreadable } = await listedAt(files);
    expect(unreadable).toEqual([]);
    let jarsWithPoms = 0;
    let packages = 0;
    const counts: string[] = [];
    for (const name of systemJars) {
      const expected = oracleOf(join(SYSTEM_JARS, name));
      if (expected.length === 0) continue;
      expect(at.get(`usr/share/java/${name}`), name).toEqual(expected);
      jarsWithPoms += 1;
      packages += expected.length;
      counts.push(`${name}: ${expected.length}`);
    }
    console.info(
      `java lister: ${jarsWithPoms} of ${systemJars.length} jars with pom.properties, ${packages} packages equal to unzip's\n${counts.join('\n')}`,
    );
    expect(jarsWithPoms).toBeGreaterThan(0);
  });

  it.skipIf(systemJars.length === 0)(
    'names a jar without pom.properties by a group Debian gives it, or by its artifactId alone',
    async () => {
      const coordinates = debianCoordinates();
      const files = new Map(systemJars.map((name) => [`usr/share/java/${name}`, readFileSync(join(SYSTEM_JARS, name))]));
      const { at } = await listedAt(files);
      const outcome = { grouped: 0, groupless: 0, none: 0 };
      const lines: string[] = [];
      for (const name of systemJars) {
        if (oracleOf(join(SYSTEM_JARS, name)).length > 0) continue;
        const found = at.get(`usr/share/java/${name}`) ?? [];
        const debian = [...(coordinates.get(realpathSync(join(SYSTEM_JARS, name))) ?? [])].sort();
        lines.push(`${name}: ${found.join(', ') || '-'} (Debian: ${debian.join(', ') || '-'})`);
        if (found.length === 0) outcome.none += 1;
        for (const foundName of found.map((f) => f.split('@')[0] as string)) {
          if (!foundName.includes(':')) {
            outcome.groupless += 1;
            continue;
          }
          outcome.grouped += 1;
          // A group the lister guessed must be the one Debian installs the jar as, where Debian says.
          if (debian.length > 0) expect(debian, name).toContain(foundName);
        }
      }
      console.info(`java lister fallback: ${JSON.stringify(outcome)}\n${lines.join('\n')}`);
    },
  );

  it('lists every jar nested in a Spring Boot jar and a WAR built by zip, at its nested location', async () => {
    const source = systemJars.length > 0 ? SYSTEM_JARS : FIXTURE_JARS;
    const jars = (systemJars.length > 0 ? systemJars : jarsIn(FIXTURE_JARS)).filter((name) => oracleOf(join(source, name)).length > 0);
    const work = mkdtempSync(join(dir, 'fat-'));
    for (const folder of ['BOOT-INF/lib', 'WEB-INF/lib']) {
      mkdirSync(join(work, folder), { recursive: true });
      for (const name of jars) copyFileSync(join(source, name), join(work, folder, name));
    }
    // Spring Boot stores its nested jars uncompressed; a WAR's are deflated like any entry.
    execFileSync('zip', ['-q', '-r', '-X', '-0', join(work, 'app.jar'), 'BOOT-INF'], { cwd: work });
    execFileSync('zip', ['-q', '-r', '-X', join(work, 'app.war'), 'WEB-INF'], { cwd: work });
    const files = new Map([
      ['app/app.jar', readFileSync(join(work, 'app.jar'))],
      ['usr/local/tomcat/webapps/app.war', readFileSync(join(work, 'app.war'))],
    ]);
    const { at, unreadable } = await listedAt(files);
    expect(unreadable).toEqual([]);
    for (const name of jars) {
      const expected = oracleOf(join(source, name));
      expect(at.get(`app/app.jar${NESTED}BOOT-INF/lib/${name}`), name).toEqual(expected);
      expect(at.get(`usr/local/tomcat/webapps/app.war${NESTED}WEB-INF/lib/${name}`), name).toEqual(expected);
    }
    expect(at.size).toBe(2 * jars.length);
  });
});
