import type { ApplicationFindings, FileLister } from '../../src/model/indexing.js';

/**
 * What a file lister finds in files as the archive walk would hand them over: each file it
 * considers (as an executable, mode 0755) and selects by its first bytes, in path order.
 */
export async function listEachFile(lister: FileLister, files: ReadonlyMap<string, Buffer>): Promise<ApplicationFindings> {
  const found: ApplicationFindings = { packages: [], unreadable: [] };
  for (const path of [...files.keys()].sort()) {
    const content = files.get(path) as Buffer;
    if (!lister.considers(path, 0o755) || !lister.selects(content.subarray(0, lister.headBytes))) continue;
    const listed = await lister.list(path, content);
    found.packages.push(...listed.packages);
    found.unreadable.push(...listed.unreadable);
  }
  return found;
}
