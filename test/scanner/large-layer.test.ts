/**
 * A 1 GiB layer uploaded by `tarsier scan` with flat client memory: the scan runs in a process of
 * its own, which reports its peak resident memory; scanning an archive with a 1 GiB layer must
 * peak within a few tens of MiB of scanning a small one (the layer is streamed, never held).
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../helpers/app.js';
import { debianLayerTar, dockerSaveArchive, largeLayerDockerArchive } from '../helpers/image-archives.js';

const COMMAND = fileURLToPath(new URL('../../src/scanner/command.ts', import.meta.url));
const GIB = 1024 * 1024 * 1024;
/** How much more the large scan may peak at than the small one. */
const ALLOWED_GROWTH = 64 * 1024 * 1024;

/** Runs the scan in a child process; returns its exit code, its report and its peak RSS in bytes. */
function scanInChild(archive: string, server: string): Promise<{ code: number; report: { layers: string[] }; maxRss: number }> {
  // The server holds no vulnerability data: what is measured is the upload, so the scan goes on without it.
  const script = `
    const { runScan } = await import(${JSON.stringify(COMMAND)});
    let out = '';
    const stdout = { write: (text, done) => { out += text; done?.(); return true; } };
    const code = await runScan(${JSON.stringify(archive)}, { server: ${JSON.stringify(server)}, format: 'json', ignoreUnfixed: false,
      quiet: true, insecure: false, update: false, allowMissingData: true }, { env: {}, stdout, stderr: process.stderr, signal: new AbortController().signal });
    process.stdout.write(JSON.stringify({ code, report: JSON.parse(out || '{}'), maxRss: process.resourceUsage().maxRSS * 1024 }));
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => {
      try {
        resolve(JSON.parse(stdout) as { code: number; report: { layers: string[] }; maxRss: number });
      } catch {
        reject(new Error(`the scan process exited ${code}: ${stderr}`));
      }
    });
  });
}

describe('a 1 GiB layer', () => {
  let t: TestApp;
  let server: string;
  let dir: string;

  beforeAll(async () => {
    t = await testApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    server = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    dir = await mkdtemp(join(tmpdir(), 'tarsier-large-'));
    await chmod(dir, 0o755);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('is uploaded with flat client memory', async () => {
    const small = join(dir, 'small.tar');
    await dockerSaveArchive(small, [{ layers: [debianLayerTar(10)] }], { style: 'legacy' });
    // The baseline's peak varies with when the collector ran; the higher of two runs is the steady one.
    const baselines = [await scanInChild(small, server), await scanInChild(small, server)];
    for (const b of baselines) expect(b.code).toBe(0);
    const baseline = baselines.reduce((a, b) => (b.maxRss > a.maxRss ? b : a));

    const large = await largeLayerDockerArchive(join(dir, 'large.tar'), GIB);
    const scanned = await scanInChild(large.file, server);
    expect(scanned.code).toBe(0);
    // The server read the whole layer: its digest was verified over the 1 GiB.
    expect(scanned.report.layers).toEqual([large.layerDigest]);
    expect(scanned.maxRss - baseline.maxRss, `peak RSS ${scanned.maxRss} vs ${baseline.maxRss}`).toBeLessThan(ALLOWED_GROWTH);
  }, 300_000);
});
