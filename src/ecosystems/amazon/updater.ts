import { directory, type Updater } from '../../model/updater.js';
import { amazonMirrorUrl, parseAmazonUpdateinfo, updateinfoLocation } from './updateinfo.js';

/** Where each release's mirror list lives under the CDN root. */
const RELEASES = [
  { namespace: 'amzn:2', mirrorList: '2/core/latest/x86_64/mirror.list' },
  { namespace: 'amzn:2023', mirrorList: 'al2023/core/mirrors/latest/x86_64/mirror.list' },
];

/**
 * Amazon Linux ALAS from each release's yum repository: mirror.list → repodata/repomd.xml →
 * the updateinfo file it names. One part per release.
 */
export const amazonUpdater = {
  name: 'amzn',
  kind: 'vulnerabilities',
  async parts(base, fetchText) {
    const root = directory(base);
    return Promise.all(
      RELEASES.map(async ({ namespace, mirrorList }) => {
        const mirror = directory(amazonMirrorUrl(await fetchText(`${root}${mirrorList}`)));
        const location = updateinfoLocation(await fetchText(`${mirror}repodata/repomd.xml`));
        if (!location) throw new Error(`${mirror}repodata/repomd.xml names no updateinfo file`);
        return {
          key: namespace,
          urls: [new URL(location, mirror).toString()],
          parse: ([file]: readonly import('node:stream').Readable[]) => parseAmazonUpdateinfo(file!, namespace),
        };
      }),
    );
  },
} satisfies Updater;

/** This folder's sources, found by the names of the catalog rows that name the folder (updater/sources.ts). */
export const sources: readonly Updater[] = [amazonUpdater];
