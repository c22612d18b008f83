/**
 * The OpenAPI document at /docs/json is generated from the routes' own schemas. It must be valid
 * (two maintained validators: Redocly's linter with its strictest ruleset, and a JSON-schema
 * validator of the OpenAPI specification), describe every route the server has with its real
 * parameters and its error bodies, and declare the security scheme when authentication is on.
 * The client replays (test/clients) check that answers match the response schemas.
 */
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { json, testApp } from '../helpers/app.js';

async function documentOf(yaml?: string) {
  const routes: Route[] = [];
  const t = await testApp({
    ...(yaml ? { yaml } : {}),
    routes: (app) =>
      app.addHook('onRoute', (route) => {
        for (const method of [route.method].flat()) {
          routes.push({ method, url: route.url });
        }
      }),
  });
  const headers = yaml ? { authorization: 'Bearer docs-token' } : {};
  const res = await t.app.inject({ url: '/docs/json', headers });
  expect(res.statusCode).toBe(200);
  return { t, text: res.body, doc: json(res), routes, headers };
}

async function problems(text: string): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended-strict'] });
  const lint = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
  const schema = await new Validator().validate(JSON.parse(text));
  return [
    ...lint.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`),
    ...(schema.valid ? [] : [`specification schema: ${JSON.stringify(schema.errors)}`]),
  ];
}

/** Fastify's /v1/layers/:name as OpenAPI's /v1/layers/{name}. */
const openApiPath = (url: string): string => url.replace(/:([A-Za-z_]+)/g, '{$1}');

/** Pages for browsers, not API routes: the dashboard's, and this document's own (/docs). */
const BROWSER_PAGES = /^\/(ui|docs)(\/|$)/;

type Route = { method: string; url: string };

/**
 * The routes the document must describe: every route but the browser pages, less the HEAD that
 * Fastify adds to each GET route (the GET's operation stands for it).
 */
function apiRoutes(routes: readonly Route[]): Route[] {
  const gets = new Set(routes.filter((r) => r.method === 'GET').map((r) => r.url));
  return routes.filter((r) => !BROWSER_PAGES.test(r.url) && !(r.method === 'HEAD' && gets.has(r.url)));
}

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1: no error and no warning from Redocly (recommended-strict) or the specification schema', async () => {
    const { text, doc } = await documentOf();
    expect(doc.openapi).toBe('3.1.0');
    expect(await problems(text)).toEqual([]);
  });

  it('lists every route the server has: each method of each path, whatever its schema says', async () => {
    const { doc, routes } = await documentOf();
    const registered = apiRoutes(routes).map((r) => `${r.method} ${openApiPath(r.url)}`);
    const listed = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(registered.length).toBeGreaterThan(30);
    expect(registered.filter((r) => !listed.includes(r))).toEqual([]);
    expect(listed.filter((r) => !registered.includes(r))).toEqual([]);
    expect(registered).toContain('HEAD /tarsier/v1/layers/{digest}');
    expect(registered).toContain('POST /tarsier/v1/sboms');
  });

  it('describes every route the server has, with its path, query and header parameters', async () => {
    const { doc, routes } = await documentOf();
    const documented = apiRoutes(routes);
    expect(documented.length).toBe(35);
    for (const route of documented) {
      const operation = doc.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url}`).toBeDefined();
      const pathParameters = [...route.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);
      const parameters = (operation.parameters ?? []) as Array<{ in: string; name: string; schema: { maxLength?: number } }>;
      expect(
        parameters
          .filter((p) => p.in === 'path')
          .map((p) => p.name)
          .sort(),
      ).toEqual(pathParameters.sort());
      // A digest is exactly sha256: and 64 hex digits; every other name is bounded by the name limit.
      for (const p of parameters.filter((p) => p.in === 'path')) {
        expect(p.schema.maxLength, `${route.url} ${p.name}`).toBe(p.name === 'digest' ? 71 : 1024);
      }
      // Every route of the v1 API reads X-Clair-Api-Revision; /v1/metrics is only Clair v2's address of /metrics.
      if (route.url.startsWith('/v1/') && route.url !== '/v1/metrics') {
        expect(parameters.some((p) => p.in === 'header' && p.name === 'x-clair-api-revision')).toBe(true);
      }
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['4XX', '5XX']));
      // Harbor's under the spec's error media type.
      const errorType = route.url.startsWith('/api/v1/') ? 'application/vnd.scanner.adapter.error+json; version=1.0' : 'application/json';
      const error = operation.responses['4XX'].content[errorType].schema;
      // Each API's own error envelope: v1's (also /tarsier and /metrics), Harbor's Pluggable Scanner API's, the ancestry API's.
      const envelope = /^\/(v1|tarsier|metrics)(\/|$)/.test(route.url)
        ? ['Error']
        : route.url.startsWith('/api/v1/')
          ? ['error']
          : ['code', 'error', 'message'];
      expect(Object.keys(error.properties).sort(), `${route.method} ${route.url}`).toEqual(envelope);
    }
    const query = (path: string, method: string) =>
      (doc.paths[path][method].parameters as Array<{ in: string; name: string; required?: boolean; schema: Record<string, unknown> }>)
        .filter((p) => p.in === 'query')
        .map((p) => [p.name, p.required ?? false, p.schema.type]);
    expect(query('/v1/layers/{name}', 'get')).toEqual([
      ['features', false, 'string'],
      ['vulnerabilities', false, 'string'],
    ]);
    expect(query('/v1/namespaces/{ns}/vulnerabilities', 'get')).toEqual([
      ['limit', true, 'integer'],
      ['page', false, 'string'],
    ]);
    expect(query('/v1/namespaces/{ns}/vulnerabilities/{name}', 'get')).toEqual([['fixedIn', false, 'string']]);
    expect(query('/v1/notifications/{name}', 'get')).toEqual([
      ['limit', false, 'integer'],
      ['page', false, 'string'],
    ]);
    expect(query('/notifications/{name}', 'get').map(([name]) => name)).toEqual([
      'limit',
      'old_vulnerability_page',
      'new_vulnerability_page',
      'oldVulnerabilityPage',
      'newVulnerabilityPage',
    ]);
    expect(query('/ancestry/{ancestry_name}', 'get').map(([name]) => name)).toEqual(['with_features', 'with_vulnerabilities']);
    expect(doc.paths['/v1/notifications/{name}'].get.parameters.find((p: { name: string }) => p.name === 'limit').schema).toMatchObject({
      minimum: 1,
      maximum: 1000,
      default: 100,
    });
    // Request bodies, and the layer report's shape.
    for (const [path, method] of [
      ['/v1/layers', 'post'],
      ['/v1/namespaces/{ns}/vulnerabilities', 'post'],
      ['/ancestry', 'post'],
    ] as const) {
      expect(doc.paths[path][method].requestBody.content['application/json'].schema.type, path).toBe('object');
    }
    // An SBOM is posted as it is, in its format's media type or as JSON.
    expect(Object.keys(doc.paths['/tarsier/v1/sboms'].post.requestBody.content)).toEqual([
      'application/json',
      'application/vnd.cyclonedx+json',
      'application/spdx+json',
    ]);
    const report = doc.paths['/v1/layers/{name}'].get.responses['200'].content['application/json'].schema;
    expect(Object.keys(report.properties.Layer.properties)).toEqual([
      'Name',
      'Namespace',
      'NamespaceName',
      'ParentName',
      'IndexedByVersion',
      'Features',
    ]);
    // A DELETE answers 200 with no body.
    expect(doc.paths['/v1/layers/{name}'].delete.responses['200'].content).toBeUndefined();
  });

  it('declares the bearer scheme and requires it everywhere when API authentication is on, and stays valid', async () => {
    const { text, doc } = await documentOf('  api:\n    auth:\n      tokens: [docs-token]');
    expect(doc.components.securitySchemes).toEqual({ bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }) });
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(await problems(text)).toEqual([]);
    const open = await documentOf();
    expect(open.doc.security).toEqual([]);
    expect(open.doc.components?.securitySchemes).toBeUndefined();
  });

  it('is rendered at /docs: the page, its script and stylesheet, and the document it loads', async () => {
    const { t } = await documentOf();
    const page = await t.app.inject({ url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    for (const asset of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-ui.css', '/docs/static/swagger-initializer.js']) {
      expect((await t.app.inject({ url: asset })).statusCode, asset).toBe(200);
    }
    const initializer = (await t.app.inject({ url: '/docs/static/swagger-initializer.js' })).body;
    expect(initializer).toMatch(/json/);
  });
});
