import { describe, expect, it } from 'vitest';
import { formatImageReference, InvalidReference, parseImageReference, registryApiHost } from '../../src/registry/reference.js';

const DIGEST = `sha256:${'a1'.repeat(32)}`;

describe('image references', () => {
  it.each([
    ['debian', { registry: 'docker.io', repository: 'library/debian', tag: 'latest' }],
    ['debian:12', { registry: 'docker.io', repository: 'library/debian', tag: '12' }],
    ['bitnami/postgresql:15.4.0-debian-11-r0', { registry: 'docker.io', repository: 'bitnami/postgresql', tag: '15.4.0-debian-11-r0' }],
    ['docker.io/library/alpine:3.19', { registry: 'docker.io', repository: 'library/alpine', tag: '3.19' }],
    ['index.docker.io/alpine', { registry: 'docker.io', repository: 'library/alpine', tag: 'latest' }],
    // Docker Hub's other names, and a host in capitals, name the registry as clair.registries keys do.
    ['registry-1.docker.io/alpine', { registry: 'docker.io', repository: 'library/alpine', tag: 'latest' }],
    ['registry.hub.docker.com/library/alpine:3', { registry: 'docker.io', repository: 'library/alpine', tag: '3' }],
    ['GHCR.io/team/app:v1', { registry: 'ghcr.io', repository: 'team/app', tag: 'v1' }],
    ['localhost:5000/app', { registry: 'localhost:5000', repository: 'app', tag: 'latest' }],
    ['localhost/app:v1', { registry: 'localhost', repository: 'app', tag: 'v1' }],
    ['127.0.0.1:5000/team/app:1.0', { registry: '127.0.0.1:5000', repository: 'team/app', tag: '1.0' }],
    ['[::1]:5000/app:1', { registry: '[::1]:5000', repository: 'app', tag: '1' }],
    ['ghcr.io/org/team/app_x__y.z-w:V1_beta.2', { registry: 'ghcr.io', repository: 'org/team/app_x__y.z-w', tag: 'V1_beta.2' }],
    [`quay.io/coreos/clair@${DIGEST}`, { registry: 'quay.io', repository: 'coreos/clair', digest: DIGEST }],
    [
      `registry.example.com:8443/a/b:tag@${DIGEST}`,
      { registry: 'registry.example.com:8443', repository: 'a/b', tag: 'tag', digest: DIGEST },
    ],
  ])('reads %s', (text, expected) => {
    expect(parseImageReference(text)).toEqual(expected);
  });

  it.each([
    ['', 'empty'],
    [' debian', 'spaces'],
    ['Debian', 'uppercase repository'],
    ['debian:', 'empty tag'],
    ['debian:-1', 'tag starting with -'],
    [`debian:${'x'.repeat(129)}`, 'tag over 128 characters'],
    ['debian@sha256:abc', 'short digest'],
    [`debian@sha256:${'A1'.repeat(32)}`, 'uppercase digest'],
    ['registry.example.com/', 'no repository'],
    ['a//b', 'empty component'],
    ['a/-b', 'component starting with a separator'],
    ['a/b..c', 'double dot'],
    ['bad_host.example.com:x/app', 'port not a number'],
    [`example.com/${'a'.repeat(256)}`, 'repository over 255 characters'],
  ])('refuses %j (%s)', (text) => {
    expect(() => parseImageReference(text)).toThrow(InvalidReference);
  });

  it('writes the full form, and sends Docker Hub requests to its API host', () => {
    expect(formatImageReference(parseImageReference('debian:12'))).toBe('docker.io/library/debian:12');
    expect(formatImageReference(parseImageReference(`ghcr.io/o/app@${DIGEST}`))).toBe(`ghcr.io/o/app@${DIGEST}`);
    expect(registryApiHost('docker.io')).toBe('registry-1.docker.io');
    expect(registryApiHost('localhost:5000')).toBe('localhost:5000');
  });
});
