/** Release files and dpkg databases for test layers. */
export const debian12 = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n';

export interface InstalledPackage {
  name: string;
  version: string;
  /** The Source field, e.g. "openssl" or "zlib (1:1.2.13.dfsg-1)". */
  source?: string;
  /** Defaults to installed. */
  status?: string;
}

function stanza(p: InstalledPackage): string {
  return [
    `Package: ${p.name}`,
    `Status: ${p.status ?? 'install ok installed'}`,
    ...(p.source ? [`Source: ${p.source}`] : []),
    `Version: ${p.version}`,
    'Architecture: amd64',
    '',
  ].join('\n');
}

/** A var/lib/dpkg/status file listing packages. */
export const dpkgStatus = (...packages: InstalledPackage[]): string => packages.map(stanza).join('\n');
