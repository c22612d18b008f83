import { reportKey as layerReportKey, type LayerReportFormat } from '../../reports/layer-reports.js';
import { featureFragment, type Revision } from './serialize.js';

/** What a GET /v1/layers/{name} asks to see. */
export interface ReportView {
  revision: Revision;
  features: boolean;
  vulnerabilities: boolean;
}

const NOTHING = Buffer.alloc(0);
const COMMA = Buffer.from(',');
const FEATURES_OPEN = Buffer.from(',"Features":[');
const FEATURES_CLOSE = Buffer.from(']}}');

/**
 * The v1 layer report of a view: `{"Layer":{…}}`, its features (when asked for) as fragments
 * (`featureFragment`) with the layer that added each in between, joined into the Features list.
 */
export function reportFormat(view: ReportView): LayerReportFormat {
  return {
    name: `${view.features}\0${view.vulnerabilities}\0${view.revision}`,
    fragmentName: `${view.revision}${view.vulnerabilities ? '+v' : ''}`,
    features: view.features,
    vulnerabilities: view.vulnerabilities,
    fragment(feature, vulnerabilities) {
      const text = featureFragment(feature, vulnerabilities, view.revision, view.vulnerabilities);
      return { head: Buffer.from(text.head), tail: Buffer.from(text.tail) };
    },
    parts(layer, features, fragments) {
      const header = JSON.stringify({
        Layer: {
          Name: layer.name,
          [view.revision === 'A' ? 'Namespace' : 'NamespaceName']: layer.namespace ?? undefined,
          ParentName: layer.parentName ?? undefined,
          IndexedByVersion: layer.indexedByVersion,
        },
      });
      if (!view.features) return { opening: Buffer.from(header), features: [], closing: NOTHING };
      const addedBy = new Map<string, Buffer>();
      return {
        opening: Buffer.concat([Buffer.from(header.slice(0, -2)), FEATURES_OPEN]),
        features: features.map((f, i) => {
          const fragment = fragments.get(f.featureVersionId)!;
          let added = addedBy.get(f.addedBy);
          if (!added) addedBy.set(f.addedBy, (added = Buffer.from(`,"AddedBy":${JSON.stringify(f.addedBy)}`)));
          return i > 0 ? [COMMA, fragment.head, added, fragment.tail] : [fragment.head, added, fragment.tail];
        }),
        closing: FEATURES_CLOSE,
      };
    },
  };
}

/** The cache key of a layer's report in a view. */
export const reportKey = (name: string, view: ReportView): string => layerReportKey(name, reportFormat(view));
