import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * GET url with curl --compressed (asks for gzip and decompresses what comes, as curl's users
 * see it): the body and the response's Content-Encoding. An external client, not Node's zlib.
 */
export async function curlCompressed(url: string, headers: Record<string, string> = {}): Promise<{ body: Buffer; encoding?: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-curl-'));
  try {
    const bodyFile = join(dir, 'body');
    const headerFile = join(dir, 'headers');
    const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
    await run('curl', ['-sS', '--fail', '--compressed', ...headerArgs, '-D', headerFile, '-o', bodyFile, url]);
    const encoding = /^content-encoding:\s*(\S+)/im.exec(await readFile(headerFile, 'utf8'))?.[1];
    return { body: await readFile(bodyFile), ...(encoding ? { encoding } : {}) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
