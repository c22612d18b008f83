/**
 * A stored vulnerability reads back with every condition its fixed-in entries were written with:
 * what the dashboard shows of an entry and what a later write merges into come from that read.
 */
import { describe, expect, it } from 'vitest';
import type { FixedIn } from '../../src/model/vulnerability.js';
import { createVulnerability, getVulnerability } from '../../src/vulndb.js';
import { freshPool } from '../helpers/db.js';

describe('a vulnerability read', () => {
  it('gives back each fixed-in entry with its architectures, bounds, source and module stream', async () => {
    const pool = await freshPool();
    const fixedIn: FixedIn[] = [
      { feature: 'bind', version: null, affectedThrough: '32:9.16.23-1.el9', affectedAbove: '32:9.11.0-1.el9' },
      { feature: 'curl', version: '0:7.76.1-26.el9_3.2', arches: ['aarch64', 'x86_64'] },
      { feature: 'ipa-client', version: '0:4.9.8-1.module+el8', module: 'idm:DL1' },
      { feature: 'vim', version: null, state: 'will_not_fix', source: true },
      { feature: 'zlib', version: '0:1.2.11-40.el9', affectedFrom: '0:1.2.11-1.el9' },
    ];
    await createVulnerability(pool, {
      namespace: 'rhel:9',
      name: 'CVE-2099-0001',
      description: '',
      link: '',
      severity: 'High',
      metadata: null,
      fixedIn,
    });
    expect((await getVulnerability(pool, 'rhel:9', 'CVE-2099-0001')).fixedIn).toEqual(fixedIn);
  });
});
