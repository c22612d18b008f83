import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DOCKER_HUB } from '../registry/reference.js';

/**
 * Registry credentials as `docker login` leaves them: `~/.docker/config.json` (or $DOCKER_CONFIG),
 * its `auths` entries (base64 user:password) and credential helpers (`credHelpers` per registry,
 * `credsStore` for all), run as `docker-credential-<name> get` with the server on stdin, as the
 * Docker CLI does. The result is a Basic Authorization value, passed for one pull and never stored.
 */

/** The key `docker login` writes for Docker Hub. */
const DOCKER_HUB_KEY = 'https://index.docker.io/v1/';
/** How long a credential helper may take (it may prompt a keychain). */
const HELPER_TIMEOUT_MS = 30_000;

interface DockerConfig {
  auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  credHelpers?: Record<string, string>;
  credsStore?: string;
}

export const basicAuthorization = (username: string, password: string): string =>
  `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/** The config.json keys that may name a registry: the bare host, with a scheme, or Docker Hub's legacy URL. */
function keysFor(registry: string): string[] {
  if (registry === DOCKER_HUB)
    return [DOCKER_HUB_KEY, 'index.docker.io', 'docker.io', 'registry-1.docker.io', 'https://index.docker.io/v1'];
  return [registry, `https://${registry}`, `http://${registry}`, `https://${registry}/v1/`, `https://${registry}/v2/`];
}

/** The Authorization for registry from docker's config, or undefined when it holds none. */
export async function dockerCredentials(registry: string, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  const dir = env.DOCKER_CONFIG || join(env.HOME || homedir(), '.docker');
  let config: DockerConfig;
  try {
    config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as DockerConfig;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${join(dir, 'config.json')} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  const keys = keysFor(registry);
  const helper = keys.map((k) => config.credHelpers?.[k]).find(Boolean) ?? config.credsStore;
  if (helper) {
    const fromHelper = await runHelper(helper, keys[0]!);
    if (fromHelper) return fromHelper;
  }
  for (const key of keys) {
    const entry = config.auths?.[key];
    if (!entry) continue;
    if (entry.auth) return `Basic ${entry.auth}`;
    if (entry.username && entry.password) return basicAuthorization(entry.username, entry.password);
  }
  return undefined;
}

/** `docker-credential-<helper> get`: {Username, Secret}; undefined when it has nothing for the server. */
function runHelper(helper: string, server: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn(`docker-credential-${helper}`, ['get'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: HELPER_TIMEOUT_MS });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ENOENT' ? resolve(undefined) : reject(new Error(`docker-credential-${helper}: ${err.message}`, { cause: err })),
    );
    child.on('close', (code) => {
      // A helper that knows nothing of the server exits 1 ("credentials not found in native keychain").
      if (code !== 0) return resolve(undefined);
      try {
        const { Username, Secret } = JSON.parse(out) as { Username?: string; Secret?: string };
        // "<token>" marks an identity (refresh) token, which needs an OAuth exchange this client does not do.
        resolve(Username && Secret && Username !== '<token>' ? basicAuthorization(Username, Secret) : undefined);
      } catch {
        resolve(undefined);
      }
    });
    child.stdin.end(server);
  });
}
