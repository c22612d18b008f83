/**
 * What a registry's push event becomes: the image to scan, pinned to the pushed digest, with its
 * tag. Payloads as the registries send them: Docker Distribution's envelope (captured from
 * docker-registry 2.8.2 by test/registry/harness.test.ts) and Harbor's PUSH_ARTIFACT event (its
 * documented webhook payload). Other events are ignored; a body of another kind is a 400.
 */
import { describe, expect, it } from 'vitest';
import { distributionPushes, harborPushes } from '../../src/api/tarsier/webhooks.js';

const DIGEST = `sha256:${'6ed3c1df'.repeat(8)}`;

describe('Harbor PUSH_ARTIFACT', () => {
  const event = (resources: unknown[], type = 'PUSH_ARTIFACT') => ({
    type,
    occur_at: 1737446601,
    operator: 'admin',
    event_data: {
      resources,
      repository: { date_created: 1737446600, name: 'app', namespace: 'library', repo_full_name: 'library/app', repo_type: 'private' },
    },
  });

  it('gives the pushed digest with its tag, on the host of resource_url', () => {
    expect(harborPushes(event([{ digest: DIGEST, tag: 'v1', resource_url: 'harbor.example.com:8443/library/app:v1' }]))).toEqual([
      { registry: 'harbor.example.com:8443', repository: 'library/app', digest: DIGEST, tag: 'v1', insecure: false },
    ]);
    expect(harborPushes(event([{ digest: DIGEST, tag: '', resource_url: `harbor.example.com/library/app@${DIGEST}` }]))).toEqual([
      { registry: 'harbor.example.com', repository: 'library/app', digest: DIGEST, tag: undefined, insecure: false },
    ]);
  });

  it('ignores other event types and refuses a body that is not a Harbor event', () => {
    expect(harborPushes(event([{ digest: DIGEST, tag: 'v1', resource_url: 'h/library/app:v1' }], 'DELETE_ARTIFACT'))).toEqual([]);
    expect(() => harborPushes({ events: [] })).toThrow('the body is not a Harbor webhook event: it has no type');
  });
});

describe('Docker Distribution envelope', () => {
  const target = (mediaType: string, extra: Record<string, unknown> = {}) => ({
    mediaType,
    size: 556,
    digest: DIGEST,
    length: 556,
    repository: 'team/app',
    url: `http://127.0.0.1:41899/v2/team/app/manifests/${DIGEST}`,
    ...extra,
  });
  const envelope = (...events: unknown[]) => ({ events });
  const push = (t: unknown, action = 'push') => ({
    id: 'a2fc4754',
    timestamp: '2026-11-24T02:32:19.511879421Z',
    action,
    target: t,
    request: { id: 'r', addr: '127.0.0.1:54278', host: '127.0.0.1:41899', method: 'PUT', useragent: 'skopeo/1.9.3' },
    actor: {},
    source: { addr: 'vm:0', instanceID: '2ab9dc58' },
  });

  it('gives manifest pushes (plain HTTP when the registry names itself with http:), not blob pushes or pulls', () => {
    const pushes = distributionPushes(
      envelope(
        push(target('application/vnd.oci.image.manifest.v1+json', { tag: 'v1' })),
        push(target('application/octet-stream')),
        push(target('application/vnd.oci.image.index.v1+json', { tag: 'v1' }), 'pull'),
      ),
    );
    expect(pushes).toEqual([{ registry: '127.0.0.1:41899', repository: 'team/app', digest: DIGEST, tag: 'v1', insecure: true }]);
  });

  it('refuses a body without an events list', () => {
    expect(() => distributionPushes({ type: 'PUSH_ARTIFACT' })).toThrow('it has no events list');
  });
});
