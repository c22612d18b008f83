import { expect } from 'vitest';
import type { TestApp } from './app.js';

/** A vulnerability as a test seeds it; Link and Description default to a tracker link and "<name> in <first package>". */
export interface VulnerabilitySeed {
  Name: string;
  Severity: string;
  Description?: string;
  Link?: string;
  Metadata?: Record<string, unknown>;
  FixedIn: ReadonlyArray<{ Name: string; Version: string }>;
}

export const seedLink = (v: Pick<VulnerabilitySeed, 'Name'>): string =>
  `https://security-tracker.debian.org/tracker/${encodeURIComponent(v.Name)}`;
export const seedDescription = (v: Pick<VulnerabilitySeed, 'Name' | 'FixedIn'>): string => `${v.Name} in ${v.FixedIn[0]!.Name}`;

/** POST /v1/namespaces/{namespace}/vulnerabilities, which must answer 201 (headers: e.g. the API token). */
export async function addVulnerability(
  t: Pick<TestApp, 'app'>,
  namespace: string,
  v: VulnerabilitySeed,
  headers: Record<string, string> = {},
): Promise<void> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/v1/namespaces/${encodeURIComponent(namespace)}/vulnerabilities`,
    headers,
    payload: {
      Vulnerability: {
        Link: seedLink(v),
        Description: seedDescription(v),
        ...v,
        NamespaceName: namespace,
        FixedIn: v.FixedIn.map((f) => ({ ...f, NamespaceName: namespace })),
      },
    },
  });
  expect(res.statusCode, res.body).toBe(201);
}
