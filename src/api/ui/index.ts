import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator, Credential } from '../auth.js';
import type { PageTokens } from '../paging.js';
import type { RouteApp } from '../route-app.js';
import type { Pool } from '../../store/pool.js';
import { MAX_NAME_LENGTH } from '../limits.js';
import { readBody } from '../request-body.js';
import { uiAsset } from './assets.js';
import { badRequest, notFound } from '../../errors.js';
import { HTML_CONTENT_TYPE, UI_PAGE_HEADERS, UI_PREFIX } from './errors.js';
import { vulnerabilityHref } from './html.js';
import { layout, type Page } from './layout.js';
import { changesPage } from './pages/changes.js';
import { feedsPage } from './pages/feeds.js';
import { imagePage } from './pages/image.js';
import { ImagesQuery, imagesPage } from './pages/images.js';
import { loginPage } from './pages/login.js';
import { vulnerabilityPage } from './pages/vulnerability.js';
import { DashboardSessions } from './sessions.js';

/**
 * The dashboard: pages rendered here from the same store reads as the images API, so
 * their numbers agree; plain links and GET forms between them, so every page can be bookmarked and
 * opened by URL; a little script for the charts only.
 *
 * Authentication: when the API requires a token (clair.api.auth), a browser cannot send it on a
 * link, so the token is entered once on /ui/login, checked as the API checks the Authorization
 * header, and a session opened (src/api/ui/sessions.ts): the cookie (HttpOnly, SameSite=Strict,
 * gone when the browser closes) carries the session's random id, never the token.
 */

export interface PageContext {
  readonly pool: Pool;
  readonly pageTokens: PageTokens;
  readonly now: Date;
  /** updater.enabledupdaters. */
  readonly enabledSources: readonly string[];
  /** updater.maxdataage: data older than this is stale; 0: never. */
  readonly maxDataAgeMs: number;
}

export interface UiDeps {
  pool: Pool;
  pageTokens: PageTokens;
  /** The API's authenticator; undefined when the API is open (so is the dashboard). */
  authenticator: Authenticator | undefined;
  /** clair.api.auth.sessionidle and sessionlifetime. */
  sessionIdleMs: number;
  sessionLifetimeMs: number;
  /** Cookies are marked Secure when the server speaks TLS. */
  secure: boolean;
  enabledSources: readonly string[];
  maxDataAgeMs: number;
  /** clair.api.bodytimeout: the sign-in form, which anyone may post, must arrive within it. */
  bodyTimeoutMs: number;
}

const COOKIE = 'tarsier_session';
const FORM_TYPE = 'application/x-www-form-urlencoded';
const MAX_FORM_BYTES = 16_384;

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** A path to return to after signing in: only a dashboard page of this server, in printable ASCII (a Location header's). */
function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/ui(\/|\?|$)[\x21-\x7e]*$/.test(next) ? next : UI_PREFIX;
}

/**
 * Whether a form post comes from a page of this server: a browser sends Origin on every POST, and
 * another site's page must not sign a visitor in with its own token (login CSRF) or out.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return request.headers['sec-fetch-site'] === undefined || request.headers['sec-fetch-site'] === 'same-origin';
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }) });
const DigestParams = Type.Object({ digest: Type.String({ pattern: '^sha256:[a-f0-9]{64}$' }) });
const PageQuery = Type.Object({ page: Type.Optional(Type.String({ maxLength: 4096 })) });
const SearchQuery = Type.Object({ name: Type.Optional(Type.String({ maxLength: MAX_NAME_LENGTH })) });
const LoginQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 2048 })) });

export function registerUi(app: RouteApp, deps: UiDeps): void {
  const { authenticator } = deps;
  const sessions = authenticator
    ? new DashboardSessions({ pool: deps.pool, authenticator, idleMs: deps.sessionIdleMs, lifetimeMs: deps.sessionLifetimeMs })
    : undefined;
  const cookie = (value: string, extra = '') =>
    `${COOKIE}=${value}; Path=/ui; HttpOnly; SameSite=Strict${extra}${deps.secure ? '; Secure' : ''}`;
  /** Routes of the dashboard (every URL under /ui) skip the API's header check (src/app.ts) and use the session cookie. */
  const config = { ui: true };
  const hidden = { hide: true };

  const signedIn = async (request: FastifyRequest): Promise<boolean> => {
    if (!sessions) return true;
    const id = cookieValue(request.headers.cookie, COOKIE);
    return id !== undefined && (await sessions.valid(id));
  };

  /** Sends a page, or the sign-in page's address when a token is needed and missing. */
  const render = async (request: FastifyRequest, reply: FastifyReply, build: (context: PageContext) => Promise<Page>) => {
    if (!(await signedIn(request))) {
      return reply
        .code(303)
        .header('location', `/ui/login?next=${encodeURIComponent(request.url)}`)
        .send();
    }
    const page = await build({
      pool: deps.pool,
      pageTokens: deps.pageTokens,
      now: new Date(),
      enabledSources: deps.enabledSources,
      maxDataAgeMs: deps.maxDataAgeMs,
    });
    return sendHtml(reply, layout({ ...page, signedIn: sessions !== undefined }).text);
  };

  app.get('/ui', { config, schema: { ...hidden, querystring: ImagesQuery } }, (request, reply) =>
    render(request, reply, (context) => imagesPage(context, request.query)),
  );
  app.get('/ui/images/:digest', { config, schema: { ...hidden, params: DigestParams } }, (request, reply) =>
    render(request, reply, (context) => imagePage(context, request.params.digest)),
  );
  app.get('/ui/vulnerabilities', { config, schema: { ...hidden, querystring: SearchQuery } }, async (request, reply) => {
    // The search form: on to the vulnerability's page (names are case-sensitive upstream; CVE ids are written upper case).
    const name = (request.query.name ?? '').trim();
    const target = name === '' ? UI_PREFIX : vulnerabilityHref(/^cve-/i.test(name) ? name.toUpperCase() : name);
    return reply.code(303).header('location', target).send();
  });
  app.get('/ui/vulnerabilities/:name', { config, schema: { ...hidden, params: NameParams, querystring: PageQuery } }, (request, reply) =>
    render(request, reply, (context) => vulnerabilityPage(context, request.params.name, request.query.page)),
  );
  app.get('/ui/changes', { config, schema: { ...hidden, querystring: PageQuery } }, (request, reply) =>
    render(request, reply, (context) => changesPage(context, request.query.page)),
  );
  app.get('/ui/feeds', { config, schema: hidden }, (request, reply) => render(request, reply, (context) => feedsPage(context)));

  app.get('/ui/assets/:name', { config, schema: { ...hidden, params: NameParams } }, async (request, reply) => {
    const asset = uiAsset(request.params.name);
    if (!asset) throw notFound(`the dashboard has no file named ${request.params.name}`);
    reply.header('etag', asset.etag).header('cache-control', 'public, max-age=3600');
    if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  });

  // Signing in: a form posting the token; it is checked as the API checks it, and a session opened.
  app.addContentTypeParser(FORM_TYPE, (request, payload, done) => {
    readBody(payload, request.headers, { deadlineMs: deps.bodyTimeoutMs, limitBytes: MAX_FORM_BYTES }).then(
      (bytes) => done(null, Object.fromEntries(new URLSearchParams(bytes.toString('utf8')))),
      (err: Error) => done(err),
    );
  });
  app.get('/ui/login', { config, schema: { ...hidden, querystring: LoginQuery } }, async (request, reply) =>
    sendHtml(reply, layout(loginPage({ next: safeNext(request.query.next), open: sessions === undefined })).text),
  );
  app.post('/ui/login', { config, schema: hidden }, async (request, reply) => {
    if (!sameOrigin(request)) throw badRequest('sign in from this server’s own page');
    const form = (request.body ?? {}) as Record<string, unknown>;
    const next = safeNext(form.next);
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    if (!authenticator || !sessions) return reply.code(303).header('location', next).send();
    let credential: Credential;
    try {
      if (token === '') throw new Error('no token');
      credential = await authenticator.authenticate(`Bearer ${token}`);
    } catch {
      request.log.info({ reason: 'unauthenticated' }, 'dashboard sign-in refused');
      reply.code(401);
      return sendHtml(reply, layout(loginPage({ next, open: false, refused: true })).text);
    }
    const id = await sessions.open(credential);
    return reply.code(303).header('set-cookie', cookie(id)).header('location', next).send();
  });
  // Signing out ends the session on the server: its cookie opens nothing any more, on any replica.
  app.post('/ui/logout', { config, schema: hidden }, async (request, reply) => {
    if (!sameOrigin(request)) throw badRequest('sign out from this server’s own page');
    const id = cookieValue(request.headers.cookie, COOKIE);
    if (sessions && id !== undefined) await sessions.end(id);
    return reply.code(303).header('set-cookie', cookie('', '; Max-Age=0')).header('location', '/ui/login').send();
  });
}

/** A page, with headers that keep it from being framed or running anything but its own scripts. */
function sendHtml(reply: FastifyReply, body: string): FastifyReply {
  return reply.type(HTML_CONTENT_TYPE).headers(UI_PAGE_HEADERS).send(body);
}
