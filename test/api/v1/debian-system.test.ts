import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { json, testApp } from '../../helpers/app.js';
import { gzip, tarball, type TarEntry } from '../../helpers/tarball.js';
import { whenDone } from '../../helpers/when-done.js';

/**
 * A real Debian system: this machine's own release files and dpkg database, packed as a layer the
 * way an image build would leave them (os-release as a symlink), and dpkg-query as the oracle for
 * which source packages and versions are installed.
 */
const isDebian = existsSync('/var/lib/dpkg/status') && existsSync('/usr/lib/os-release') && hasDpkgQuery();

function hasDpkgQuery(): boolean {
  try {
    execFileSync('dpkg-query', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Source packages dpkg itself reports as present, as "name version". */
function dpkgQuerySources(): string[] {
  const out = execFileSync('dpkg-query', ['-W', '-f=${db:Status-Status}|${source:Package}|${source:Version}\n'], { encoding: 'utf8' });
  const present = new Set(['installed', 'half-configured', 'unpacked', 'half-installed', 'triggers-awaited', 'triggers-pending']);
  const sources = new Set<string>();
  for (const line of out.trim().split('\n')) {
    const [state, name, version] = line.split('|');
    if (present.has(state!)) sources.add(`${name} ${version}`);
  }
  return [...sources].sort();
}

describe.runIf(isDebian)("this machine's Debian system as a layer", () => {
  it('lists exactly the source packages dpkg-query reports, under the release os-release names', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tarsier-debian-'));
    await chmod(dir, 0o755);
    whenDone(() => rm(dir, { recursive: true, force: true }));
    const entries: TarEntry[] = [
      { path: 'etc/os-release', type: 'symlink', target: readlinkSync('/etc/os-release') },
      { path: 'usr/lib/os-release', content: readFileSync('/usr/lib/os-release') },
      { path: 'var/lib/dpkg/status', content: readFileSync('/var/lib/dpkg/status') },
    ];
    const path = join(dir, 'rootfs.tar.gz');
    await writeFile(path, gzip(tarball(entries)));

    const t = await testApp({ yaml: `  api:\n    localroots: [${dir}]` });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/layers',
      payload: { Layer: { Name: 'debian-rootfs', Path: path, Format: 'Docker' } },
    });
    expect(res.statusCode).toBe(201);
    const layer = json(await t.app.inject({ url: '/v1/layers/debian-rootfs?features' })).Layer;

    const osRelease = Object.fromEntries(
      readFileSync('/usr/lib/os-release', 'utf8')
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/"/g, '')]),
    );
    expect(layer.NamespaceName).toBe(`${osRelease.ID}:${osRelease.VERSION_ID}`);
    const listed = layer.Features.map((f: { Name: string; Version: string }) => `${f.Name} ${f.Version}`).sort();
    expect(listed).toEqual(dpkgQuerySources());
    expect(listed.length).toBeGreaterThan(50);
  });
});
