/**
 * Image references as Docker and every registry client write them: `[host[:port]/]path[:tag][@digest]`
 * (the grammar of github.com/distribution/reference). A first component with a dot, a colon or
 * `localhost` is the registry host; otherwise the image is on Docker Hub, where a one-component path
 * lives under `library/`.
 */

export interface ImageReference {
  /** The registry as written in references and configured credentials: `ghcr.io`, `localhost:5000`, `docker.io`. */
  registry: string;
  /** The repository within the registry: `library/debian`, `org/team/app`. */
  repository: string;
  /** Absent when the reference gives only a digest; `latest` when it gives neither. */
  tag?: string;
  /** `sha256:<64 hex>`, when given. */
  digest?: string;
}

export const DOCKER_HUB = 'docker.io';
/** Docker Hub's registry API is not served at docker.io. */
const DOCKER_HUB_API_HOST = 'registry-1.docker.io';
const DEFAULT_TAG = 'latest';
/** The distribution spec bounds a repository name (registries refuse longer ones). */
const MAX_NAME_LENGTH = 255;

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$/;
const IPV6_HOST = /^\[[a-fA-F0-9:]+\](?::[0-9]+)?$/;

export class InvalidReference extends Error {}

/** The names Docker Hub's registry goes by, besides docker.io. */
const DOCKER_HUB_ALIASES = new Set(['index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);

/**
 * A registry host[:port] as Tarsier names it everywhere (references, records, clair.registries
 * keys): lower case (hosts are case-insensitive), Docker Hub as docker.io under any of its names.
 */
export function canonicalRegistry(host: string): string {
  const lower = host.toLowerCase();
  return DOCKER_HUB_ALIASES.has(lower) ? DOCKER_HUB : lower;
}

/** Parses an image reference; throws InvalidReference with what is wrong. */
export function parseImageReference(text: string): ImageReference {
  const invalid = (why: string) => new InvalidReference(`image reference ${JSON.stringify(text)} ${why}`);
  if (text === '' || text.trim() !== text) throw invalid('is empty or has surrounding spaces');

  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalid('has a digest that is not sha256:<64 lowercase hex digits>');
  }

  // The tag follows the last colon after the last slash (a colon before it belongs to a port).
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw invalid('has a tag that is not 1-128 letters, digits, _ . or - (not starting with . or -)');
  }

  const components = rest.split('/');
  let registry = DOCKER_HUB;
  const first = components[0]!;
  if (components.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('['))) {
    if (!HOST.test(first) && !IPV6_HOST.test(first)) throw invalid(`has an invalid registry host ${JSON.stringify(first)}`);
    registry = canonicalRegistry(first);
    components.shift();
  }
  if (components.some((c) => !PATH_COMPONENT.test(c))) {
    throw invalid('has a repository that is not lowercase letters and digits separated by ".", "_", "__" or "-", in "/"-separated parts');
  }
  if (registry === DOCKER_HUB && components.length === 1) components.unshift('library');
  const repository = components.join('/');
  if (repository.length > MAX_NAME_LENGTH) throw invalid(`has a repository longer than ${MAX_NAME_LENGTH} characters`);

  return {
    registry,
    repository,
    ...(tag !== undefined || digest === undefined ? { tag: tag ?? DEFAULT_TAG } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** Whether text is a digest as references write it: `sha256:<64 lowercase hex>`. */
export function isDigest(text: string): boolean {
  return DIGEST.test(text);
}

/** Whether text is a tag as references write it (not a digest, not empty). */
export function isTag(text: string): boolean {
  return TAG.test(text);
}

/** The host (and port) that serves the registry API for a reference's registry. */
export function registryApiHost(registry: string): string {
  return registry === DOCKER_HUB ? DOCKER_HUB_API_HOST : registry;
}

/** The reference in its full, canonical form: `docker.io/library/debian:12`, `ghcr.io/o/app@sha256:…`. */
export function formatImageReference(reference: ImageReference): string {
  const tag = reference.tag !== undefined ? `:${reference.tag}` : '';
  const digest = reference.digest !== undefined ? `@${reference.digest}` : '';
  return `${reference.registry}/${reference.repository}${tag}${digest}`;
}
