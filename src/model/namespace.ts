import type { VersionFormatName } from './version-format.js';

export interface Namespace {
  readonly name: string;
  readonly versionFormat: VersionFormatName;
}
