import type { LayerFiles, NamespaceDetector } from '../../model/indexing.js';
import { alpineFromVersion } from './names.js';
import { fileText } from './parse.js';

/** `/etc/alpine-release`: one line holding the release, `3.19.1` (or `3.20_alpha20240101` on edge). */
const ALPINE_RELEASE = 'etc/alpine-release';

export const alpineReleaseDetector = {
  name: 'alpine-release',
  version: 1,
  wants: (path: string) => path === ALPINE_RELEASE,
  detect(files: LayerFiles): string | undefined {
    const firstLine = fileText(files, ALPINE_RELEASE)?.split(/\r?\n/, 1)[0];
    return firstLine === undefined ? undefined : alpineFromVersion(firstLine);
  },
} satisfies NamespaceDetector;
