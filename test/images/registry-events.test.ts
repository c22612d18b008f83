/**
 * What a registry's event becomes: a push, the image to scan, pinned to the pushed digest, with its
 * tag; a delete, the manifest (by digest) or tag that went. Payloads as the registries send them:
 * Docker Distribution's envelope (pushes captured from docker-registry 2.8.2 by
 * test/registry/harness.test.ts, deletes captured from the same registry answering `DELETE
 * /v2/<name>/manifests/<digest>`) and Harbor's PUSH_ARTIFACT and DELETE_ARTIFACT events (the payload
 * goharbor/harbor's artifact webhook handler builds: an untagged artifact's "tag" is its digest).
 * Other events are ignored; a body of another kind is a 400.
 */
import { describe, expect, it } from 'vitest';
import { distributionEvents, harborEvents } from '../../src/images/registry-events.js';

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

  it('gives the pushed digest with its tag, on the host of resource_url; an untagged artifact has no tag', () => {
    expect(harborEvents(event([{ digest: DIGEST, tag: 'v1', resource_url: 'harbor.example.com:8443/library/app:v1' }]))).toEqual([
      { kind: 'push', registry: 'harbor.example.com:8443', repository: 'library/app', digest: DIGEST, tag: 'v1', insecure: false },
    ]);
    for (const tag of ['', DIGEST]) {
      expect(harborEvents(event([{ digest: DIGEST, tag, resource_url: `harbor.example.com/library/app@${DIGEST}` }]))).toEqual([
        { kind: 'push', registry: 'harbor.example.com', repository: 'library/app', digest: DIGEST, tag: undefined, insecure: false },
      ]);
    }
  });

  it('gives a deleted artifact by its digest, whatever its tag (all its tags go with it)', () => {
    expect(
      harborEvents(event([{ digest: DIGEST, tag: 'v1', resource_url: 'harbor.example.com/library/app:v1' }], 'DELETE_ARTIFACT')),
    ).toEqual([{ kind: 'delete', registry: 'harbor.example.com', repository: 'library/app', digest: DIGEST, tag: undefined }]);
  });

  it('ignores other event types and refuses a body that is not a Harbor event', () => {
    expect(harborEvents(event([{ digest: DIGEST, tag: 'v1', resource_url: 'h/library/app:v1' }], 'PULL_ARTIFACT'))).toEqual([]);
    expect(() => harborEvents({ events: [] })).toThrow('the body is not a Harbor webhook event: it has no type');
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
    const pushes = distributionEvents(
      envelope(
        push(target('application/vnd.oci.image.manifest.v1+json', { tag: 'v1' })),
        push(target('application/octet-stream')),
        push(target('application/vnd.oci.image.index.v1+json', { tag: 'v1' }), 'pull'),
      ),
    );
    expect(pushes).toEqual([
      { kind: 'push', registry: '127.0.0.1:41899', repository: 'team/app', digest: DIGEST, tag: 'v1', insecure: true },
    ]);
  });

  /** A delete as docker-registry 2.8.2 sends it: no media type, no URL; the registry's host is the request's. */
  const deleted = (target: Record<string, string>) => ({
    id: 'fcc9803e-67e9-47c5-bf93-658fbe03edaa',
    timestamp: '2026-11-26T17:40:39.425375547Z',
    action: 'delete',
    target: { ...target, repository: 'team/app' },
    request: { id: '80133918', addr: '127.0.0.1:43336', host: '127.0.0.1:41899', method: 'DELETE', useragent: 'curl/7.88.1' },
    actor: {},
    source: { addr: 'vm:41899', instanceID: '84b174b5-f958-40bf-aabf-92ec14f07d0c' },
  });

  it('gives a deleted manifest by digest and each tag the delete removed, on the host of the request', () => {
    expect(distributionEvents(envelope(deleted({ digest: DIGEST }), deleted({ tag: 'v1' })))).toEqual([
      { kind: 'delete', registry: '127.0.0.1:41899', repository: 'team/app', digest: DIGEST, tag: undefined },
      { kind: 'delete', registry: '127.0.0.1:41899', repository: 'team/app', digest: undefined, tag: 'v1' },
    ]);
    // A repository delete (no digest, no tag) and a digest no image can have name nothing Tarsier records.
    expect(distributionEvents(envelope(deleted({}), deleted({ digest: `sha512:${'ab'.repeat(64)}` })))).toEqual([]);
  });

  it('refuses a body without an events list', () => {
    expect(() => distributionEvents({ type: 'PUSH_ARTIFACT' })).toThrow('it has no events list');
  });
});
