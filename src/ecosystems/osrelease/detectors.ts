import type { NamespaceDetector } from '../../model/indexing.js';
import { alpineReleaseDetector } from './alpine-release.js';
import { aptSourcesDetector } from './apt-sources.js';
import { lsbReleaseDetector } from './lsb-release.js';
import { osReleaseDetector } from './os-release.js';
import { redhatReleaseDetector } from './redhat-release.js';
import { suseProductDetector } from '../suse/products.js';

/**
 * The namespace detectors in precedence order: a layer's namespace is the first one any of them
 * returns. SUSE's installed products come first, as they qualify what os-release says (a service
 * pack with LTSS); os-release is the standard and the most precise; the older per-distribution
 * files follow; apt sources come last because third-party repositories can name other releases.
 */
export const NAMESPACE_DETECTORS: readonly NamespaceDetector[] = [
  suseProductDetector,
  osReleaseDetector,
  lsbReleaseDetector,
  alpineReleaseDetector,
  redhatReleaseDetector,
  aptSourcesDetector,
];
