import { reportKey as layerReportKey, type LayerReportFormat } from '../../reports/layer-reports.js';
import { featureFragment, type Revision } from './serialize.js';

/** What a GET /v1/layers/{name} asks to see. */
export interface ReportView {
  revision: Revision;
  features: boolean;
  vulnerabilities: boolean;
}

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
    body(layer, features, fragments) {
      const header = JSON.stringify({
        Layer: {
          Name: layer.name,
          [view.revision === 'A' ? 'Namespace' : 'NamespaceName']: layer.namespace ?? undefined,
          ParentName: layer.parentName ?? undefined,
          IndexedByVersion: layer.indexedByVersion,
        },
      });
      if (!view.features) return Buffer.from(header);
      const addedBy = new Map<string, Buffer>();
      const parts: Buffer[] = [Buffer.from(header.slice(0, -2)), FEATURES_OPEN];
      features.forEach((f, i) => {
        const fragment = fragments.get(f.featureVersionId)!;
        let added = addedBy.get(f.addedBy);
        if (!added) addedBy.set(f.addedBy, (added = Buffer.from(`,"AddedBy":${JSON.stringify(f.addedBy)}`)));
        if (i > 0) parts.push(COMMA);
        parts.push(fragment.head, added, fragment.tail);
      });
      parts.push(FEATURES_CLOSE);
      return Buffer.concat(parts);
    },
  };
}

/** The cache key of a layer's report in a view. */
export const reportKey = (name: string, view: ReportView): string => layerReportKey(name, reportFormat(view));
