/**
 * Real rpm tooling for matching corpora: rpm's own version comparator (Debian's python3-rpm) as the
 * oracle for every ordering, rpm databases written by rpm itself (`rpmbuild` of minimal spec files,
 * then `rpm --justdb` into a SQLite rpmdb), and a small XML element tree for reading feeds without
 * the project's parsers.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SaxesParser } from 'saxes';

const PYTHON = '/usr/bin/python3';

/** Why the corpus cannot run here, or undefined when rpm, rpmbuild and python3-rpm are installed. */
export function rpmToolsMissing(): string | undefined {
  for (const tool of ['rpm', 'rpmbuild']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed (Debian package rpm)`;
    }
  }
  try {
    execFileSync(PYTHON, ['-c', 'import rpm'], { stdio: 'ignore' });
  } catch {
    return `${PYTHON} cannot import rpm (Debian package python3-rpm)`;
  }
  return undefined;
}

const COMPARE = `
import json, sys, rpm
out = []
for a, b in json.load(sys.stdin):
    x, y = rpm.ver(a), rpm.ver(b)
    out.append((x > y) - (x < y))
json.dump(out, sys.stdout)
`;

/** rpm's comparator (rpm.ver of python3-rpm) on [epoch:]version[-release] strings, asked once for many pairs. */
export class RpmComparator {
  private readonly known = new Map<string, number>();

  /** Asks rpm about every pair not yet known, in one process. */
  learn(pairs: Iterable<readonly [string, string]>): void {
    const wanted = [...pairs].filter(([a, b]) => !this.known.has(`${a}\0${b}`));
    if (wanted.length === 0) return;
    const answer = JSON.parse(execFileSync(PYTHON, ['-c', COMPARE], { input: JSON.stringify(wanted) }).toString()) as number[];
    wanted.forEach(([a, b], i) => {
      this.known.set(`${a}\0${b}`, answer[i]!);
      this.known.set(`${b}\0${a}`, -answer[i]!);
    });
  }

  /** <0, 0, >0 as rpm orders a and b; the pair must have been learnt. */
  compare(a: string, b: string): number {
    const known = this.known.get(`${a}\0${b}`);
    if (known === undefined) throw new Error(`rpm was not asked to compare ${a} and ${b}`);
    return known;
  }
}

/** An installed package of a corpus layer. */
export interface CorpusPackage {
  name: string;
  epoch?: string;
  version: string;
  release: string;
  arch: string;
  /** The module stream build it came from (`name:stream:version:context`), as rpm records it for a module's packages. */
  modularityLabel?: string;
}

/** epoch:version-release as rpm reads it (epoch 0 when absent). */
export const evrOf = (p: { epoch?: string; version: string; release: string }): string => `${p.epoch ?? '0'}:${p.version}-${p.release}`;

/** The version Tarsier reports for an installed package: a zero or missing epoch is not written. */
export const featureVersion = (p: CorpusPackage): string => `${p.epoch && p.epoch !== '0' ? `${p.epoch}:` : ''}${p.version}-${p.release}`;

/** [epoch, version, release] of `[E:]V-R`. */
export function splitEvr(evr: string): { epoch: string; version: string; release: string } {
  const colon = evr.indexOf(':');
  const epoch = colon >= 0 ? evr.slice(0, colon) : '0';
  const vr = evr.slice(colon + 1);
  const dash = vr.lastIndexOf('-');
  return dash < 0 ? { epoch, version: vr, release: '' } : { epoch, version: vr.slice(0, dash), release: vr.slice(dash + 1) };
}

/**
 * Installed versions around a bound E:V-R, each checked with rpm: one below it, the bound itself
 * and one above it (a release with one more segment, which rpm orders after). The candidates for
 * "below" are tried in order until rpm agrees one is lower.
 */
export function around(bound: string, rpmCompare: RpmComparator): Array<{ epoch: string; version: string; release: string }> {
  const { epoch, version, release } = splitEvr(bound);
  const at = { epoch, version, release: release === '' ? '1' : release };
  const decrement = (s: string): string | undefined => {
    const m = /^(.*?)(\d+)(\D*)$/.exec(s);
    return m && Number(m[2]) > 0 ? `${m[1]}${Number(m[2]) - 1}${m[3]}` : undefined;
  };
  const belowRelease = decrement(at.release);
  const belowVersion = decrement(version);
  const candidates = [
    ...(belowRelease ? [{ epoch, version, release: belowRelease }] : []),
    ...(belowVersion ? [{ epoch, version: belowVersion, release: at.release }] : []),
    { epoch, version: '0', release: '0' },
  ];
  const above = { epoch, version, release: `${at.release}.1` };
  rpmCompare.learn([...candidates, at, above].map((c) => [evrOf(c), bound] as const));
  const below = candidates.find((c) => rpmCompare.compare(evrOf(c), bound) < 0);
  const result = [...(below ? [below] : []), at, above];
  // rpm's order confirms below < bound <= at < above (a bound without a release is matched by any at its version).
  if (rpmCompare.compare(evrOf(above), bound) <= 0) throw new Error(`${evrOf(above)} is not above ${bound}`);
  if (rpmCompare.compare(evrOf(at), bound) < 0) throw new Error(`${evrOf(at)} is below ${bound}`);
  return result;
}

const specOf = (main: string, packages: readonly CorpusPackage[], asMain: boolean): string => {
  const tags = (p: CorpusPackage): string =>
    `Version: ${p.version}\nRelease: ${p.release}\n${p.epoch && p.epoch !== '0' ? `Epoch: ${p.epoch}\n` : ''}` +
    (p.modularityLabel ? `ModularityLabel: ${p.modularityLabel}\n` : '');
  if (asMain) {
    const p = packages[0]!;
    return `Name: ${p.name}\n${tags(p)}Summary: corpus\nLicense: MIT\n%description\ncorpus\n%files\n`;
  }
  const head = `Name: ${main}\nVersion: 1\nRelease: 1\nSummary: corpus\nLicense: MIT\n%description\ncorpus\n`;
  return (
    head +
    packages
      .map((p) => `%package -n ${p.name}\nSummary: corpus\n${tags(p)}%description -n ${p.name}\ncorpus\n%files -n ${p.name}\n`)
      .join('')
  );
};

/**
 * A SQLite rpmdb (rpm ≥ 4.16) written by rpm holding packages of one architecture, built with
 * rpmbuild. Each package is a binary of its own source package when ownSource (SOURCERPM is
 * name-version-release.src.rpm, as distributions naming source packages need), else a
 * subpackage of a few shared spec files (one spec per version of a name: much faster).
 */
export function rpmDatabase(packages: readonly CorpusPackage[], arch: string, ownSource: boolean): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'rpm-corpus-'));
  try {
    const specs: string[] = [];
    const write = (name: string, text: string): void => {
      const path = join(dir, `${name}.spec`);
      writeFileSync(path, text);
      specs.push(path);
    };
    if (ownSource) {
      packages.forEach((p, i) => write(`p${i}`, specOf(p.name, [p], true)));
    } else {
      const slots: CorpusPackage[][] = [];
      for (const p of packages) {
        const slot = slots.find((s) => !s.some((q) => q.name === p.name));
        if (slot) slot.push(p);
        else slots.push([p]);
      }
      slots.forEach((slot, i) => write(`s${i}`, specOf(`corpus-slot-${i}`, slot, false)));
    }
    const top = join(dir, 'top');
    const target = arch === 'noarch' ? [] : ['--target', arch];
    if (arch === 'noarch') for (const spec of specs) writeFileSync(spec, `BuildArch: noarch\n${readFileSync(spec, 'utf8')}`);
    execFileSync('rpmbuild', ['-bb', '--quiet', ...target, '--define', `_topdir ${top}`, ...specs], { stdio: 'pipe' });
    const rpmsDir = join(top, 'RPMS', arch);
    const rpms = readdirSync(rpmsDir).map((f) => join(rpmsDir, f));
    const db = join(dir, 'db');
    mkdirSync(db);
    execFileSync('rpm', ['--dbpath', db, '--justdb', '--nodeps', '--noscripts', '--ignorearch', '--ignoreos', '-i', ...rpms], {
      stdio: 'pipe',
    });
    const wal = join(db, 'rpmdb.sqlite-wal');
    if (existsSync(wal) && readFileSync(wal).length > 0) throw new Error('rpm left its write-ahead log unmerged');
    return readFileSync(join(db, 'rpmdb.sqlite'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An XML element with its local name (namespace prefix dropped), attributes, children and text. */
export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

export function xmlTree(text: string): XmlElement {
  const parser = new SaxesParser();
  const root: XmlElement = { name: '#document', attrs: {}, children: [], text: '' };
  const stack = [root];
  parser.on('opentag', (tag) => {
    const element: XmlElement = {
      name: tag.name.replace(/^.*:/, ''),
      attrs: tag.attributes as Record<string, string>,
      children: [],
      text: '',
    };
    stack.at(-1)!.children.push(element);
    stack.push(element);
  });
  parser.on('closetag', () => void stack.pop());
  parser.on('text', (t) => (stack.at(-1)!.text += t));
  parser.write(text).close();
  return root.children[0]!;
}

/** Every descendant element named name. */
export function descendants(element: XmlElement, name: string): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement): void => {
    for (const c of e.children) {
      if (c.name === name) out.push(c);
      walk(c);
    }
  };
  walk(element);
  return out;
}
