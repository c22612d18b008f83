import type { FastifyReply, FastifyRequest } from 'fastify';
import { badRequest } from '../../errors.js';
import { NO_FIX, parseSeverity, type FixedIn, type Vulnerability } from '../../model/vulnerability.js';
import type { Pool } from '../../store/pool.js';
import * as vulndb from '../../vulndb.js';
import type { PageTokens } from '../paging.js';
import { flag, pageToken, revisionOf } from './request.js';
import {
  Empty,
  FeatureEnvelope,
  FixList,
  FixParams,
  FixResponse,
  NamespaceList,
  NamespaceParams,
  VulnerabilityEnvelope,
  VulnerabilityList,
  VulnerabilityListQuery,
  VulnerabilityParams,
  VulnerabilityQuery,
  VulnerabilityResponse,
  type FeatureInput,
  type VulnerabilityInput,
} from './schemas.js';
import * as serialize from './serialize.js';
import type { Revision } from './serialize.js';
import type { RouteApp } from '../route-app.js';

export interface V1Deps {
  pool: Pool;
  pageTokens: PageTokens;
  defaultRevision: Revision;
}

/** Namespace given in a body must agree with the one in the URL. */
function bodyNamespace(
  input: { Namespace?: string | undefined; NamespaceName?: string | undefined },
  urlNamespace: string,
  what: string,
): void {
  const given = input.NamespaceName ?? input.Namespace;
  if (given !== undefined && given !== '' && given !== urlNamespace) {
    throw badRequest(`${what} is in namespace ${given}, but the URL names namespace ${urlNamespace}`);
  }
}

/** label names the input in messages: FixedIn[2], or Feature. */
function toFixedIn(input: FeatureInput, label: string, namespace: string): FixedIn {
  bodyNamespace(input, namespace, label);
  if (!input.Name) throw badRequest(`${label}.Name is required (the package name)`);
  if (input.Version === undefined || input.Version.trim() === '') {
    throw badRequest(`${label}.Version is required ("None" when no fix exists)`);
  }
  return { feature: input.Name, version: input.Version === NO_FIX ? null : input.Version.trim() };
}

/** The one VersionFormat the client's FixedIn entries name, if any. */
function clientVersionFormat(fixedIn: readonly FeatureInput[]): string | undefined {
  const formats = new Set(fixedIn.map((f) => f.VersionFormat?.trim().toLowerCase()).filter((f): f is string => !!f));
  if (formats.size > 1) throw badRequest(`FixedIn entries name different version formats: ${[...formats].join(', ')}`);
  return [...formats][0];
}

interface ParsedVulnerability {
  vulnerability: Vulnerability;
  clientFormat: string | undefined;
}

function parseVulnerability(input: VulnerabilityInput, namespace: string, urlName?: string): ParsedVulnerability {
  bodyNamespace(input, namespace, `vulnerability ${input.Name ?? ''}`.trim());
  if (urlName !== undefined && input.Name !== undefined && input.Name !== '' && input.Name !== urlName) {
    throw badRequest(`the body names vulnerability ${input.Name}, but the URL names ${urlName}`);
  }
  const name = urlName ?? input.Name;
  if (!name) throw badRequest('Vulnerability.Name is required');
  const severity = input.Severity === undefined ? 'Unknown' : parseSeverity(input.Severity);
  if (!severity) {
    throw badRequest(`Severity ${JSON.stringify(input.Severity)} is not one of Unknown, Negligible, Low, Medium, High, Critical, Defcon1`);
  }
  const fixedInInput = input.FixedIn ?? [];
  return {
    vulnerability: {
      namespace,
      name,
      description: input.Description ?? '',
      link: input.Link ?? '',
      severity,
      metadata: input.Metadata ?? null,
      fixedIn: fixedInInput.map((f, i) => toFixedIn(f, `FixedIn[${i}]`, namespace)),
    },
    clientFormat: clientVersionFormat(fixedInInput),
  };
}

export function registerVulnerabilityRoutes(app: RouteApp, deps: V1Deps): void {
  const { pool, pageTokens } = deps;
  const revision = (request: FastifyRequest): Revision => revisionOf(request, deps.defaultRevision);

  const sendVulnerability = async (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    v: vulndb.StoredVulnerability,
    fixedIn: boolean,
  ): Promise<FastifyReply> => {
    const view = { fixedIn, versionFormat: fixedIn ? v.versionFormat : undefined };
    return reply.code(status).send({ Vulnerability: serialize.vulnerability(v, revision(request), view) });
  };

  const tags = ['v1 vulnerabilities'];

  app.get(
    '/v1/namespaces',
    {
      schema: {
        operationId: 'listNamespaces',
        summary: 'The namespaces (distribution releases) in the database',
        tags,
        response: { 200: NamespaceList },
      },
    },
    async (request) => ({ Namespaces: serialize.namespaces(await vulndb.listNamespaces(pool), revision(request)) }),
  );

  app.get(
    '/v1/namespaces/:ns/vulnerabilities',
    {
      schema: {
        operationId: 'listVulnerabilities',
        summary: "A page of a namespace's vulnerabilities",
        tags,
        params: NamespaceParams,
        querystring: VulnerabilityListQuery,
        response: { 200: VulnerabilityList },
      },
    },
    async (request) => {
      const limit = request.query.limit;
      const token = pageToken(request.query.page);
      const startId = token === undefined ? 0 : vulnerabilityPageStart(pageTokens.decode(token));
      const page = await vulndb.listVulnerabilities(pool, request.params.ns, startId, limit);
      const rev = revision(request);
      return {
        Vulnerabilities: page.vulnerabilities.map((v) => serialize.vulnerability(v, rev)),
        ...(page.nextId === null ? {} : { NextPage: pageTokens.encode(page.nextId) }),
      };
    },
  );

  app.post(
    '/v1/namespaces/:ns/vulnerabilities',
    {
      schema: {
        operationId: 'createVulnerability',
        summary: 'Add a vulnerability',
        description: 'Records a notification for it. "None" as a fixed version means no fix exists yet.',
        tags,
        params: NamespaceParams,
        body: VulnerabilityEnvelope,
        response: { 201: VulnerabilityResponse },
      },
    },
    async (request, reply) => {
      const { vulnerability, clientFormat } = parseVulnerability(request.body.Vulnerability, request.params.ns);
      const result = await vulndb.createVulnerability(pool, vulnerability, clientFormat);
      return sendVulnerability(request, reply, 201, result.vulnerability, true);
    },
  );

  app.get(
    '/v1/namespaces/:ns/vulnerabilities/:name',
    {
      schema: {
        operationId: 'getVulnerability',
        summary: 'A vulnerability',
        tags,
        params: VulnerabilityParams,
        querystring: VulnerabilityQuery,
        response: { 200: VulnerabilityResponse },
      },
    },
    async (request, reply) => {
      const found = await vulndb.getVulnerability(pool, request.params.ns, request.params.name);
      return sendVulnerability(request, reply, 200, found, flag(request.query.fixedIn));
    },
  );

  app.put(
    '/v1/namespaces/:ns/vulnerabilities/:name',
    {
      schema: {
        operationId: 'updateVulnerability',
        summary: "Change a vulnerability's description, link, severity or metadata",
        description: 'FixedIn must be empty: fixes have their own routes. Records a notification when anything changed.',
        tags,
        params: VulnerabilityParams,
        body: VulnerabilityEnvelope,
        response: { 200: VulnerabilityResponse },
      },
    },
    async (request, reply) => {
      const input = request.body.Vulnerability;
      if (input.FixedIn && input.FixedIn.length > 0) {
        throw badRequest('Vulnerability.FixedIn must be empty in a PUT: manage fixes through .../fixes/{featureName}');
      }
      const { vulnerability, clientFormat } = parseVulnerability(input, request.params.ns, request.params.name);
      const result = await vulndb.updateVulnerability(pool, vulnerability, clientFormat);
      return sendVulnerability(request, reply, 200, result.vulnerability, true);
    },
  );

  app.delete(
    '/v1/namespaces/:ns/vulnerabilities/:name',
    {
      schema: {
        operationId: 'deleteVulnerability',
        summary: 'Delete a vulnerability',
        description: 'Records a notification (Old only).',
        tags,
        params: VulnerabilityParams,
        response: { 200: Empty },
      },
    },
    async (request, reply) => {
      await vulndb.deleteVulnerability(pool, request.params.ns, request.params.name);
      return reply.code(200).send();
    },
  );

  app.get(
    '/v1/namespaces/:ns/vulnerabilities/:name/fixes',
    {
      schema: {
        operationId: 'listFixes',
        summary: "A vulnerability's fixed packages",
        tags,
        params: VulnerabilityParams,
        response: { 200: FixList },
      },
    },
    async (request) => {
      const found = await vulndb.getVulnerability(pool, request.params.ns, request.params.name);
      const rev = revision(request);
      return { Features: found.fixedIn.map((f) => serialize.fixedInFeature(f, found.namespace, rev, found.versionFormat)) };
    },
  );

  app.put(
    '/v1/namespaces/:ns/vulnerabilities/:name/fixes/:feature',
    {
      schema: {
        operationId: 'putFix',
        summary: 'Add or replace the fix of one package',
        tags,
        params: FixParams,
        body: FeatureEnvelope,
        response: { 200: FixResponse },
      },
    },
    async (request) => {
      const { ns, name, feature } = request.params;
      const input = request.body.Feature;
      if (input.Name !== undefined && input.Name !== '' && input.Name !== feature) {
        throw badRequest(`the body names feature ${input.Name}, but the URL names ${feature}`);
      }
      const fix = toFixedIn({ ...input, Name: feature }, 'Feature', ns);
      const { vulnerability } = await vulndb.putFix(pool, ns, name, fix);
      return { Feature: serialize.fixedInFeature(fix, ns, revision(request), vulnerability.versionFormat) };
    },
  );

  app.delete(
    '/v1/namespaces/:ns/vulnerabilities/:name/fixes/:feature',
    {
      schema: {
        operationId: 'deleteFix',
        summary: 'Delete the fix of one package',
        tags,
        params: FixParams,
        response: { 200: Empty },
      },
    },
    async (request, reply) => {
      const { ns, name, feature } = request.params;
      await vulndb.deleteFix(pool, ns, name, feature);
      return reply.code(200).send();
    },
  );
}

/** A vulnerability-list token holds the id to start at. */
function vulnerabilityPageStart(payload: unknown): number {
  if (typeof payload !== 'number' || !Number.isSafeInteger(payload) || payload < 0) {
    throw badRequest('page is not a token of a vulnerability list; start again from the first page');
  }
  return payload;
}
