import { describe, expect, it } from 'vitest';
import { json, testApp } from '../helpers/app.js';

describe('API description', () => {
  it('serves an OpenAPI document covering both APIs at /docs/json, and a browsable UI at /docs', async () => {
    const { app } = await testApp();
    const res = await app.inject({ url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const doc = json(res);
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('Tarsier');
    for (const path of [
      '/v1/layers',
      '/v1/layers/{name}',
      '/v1/namespaces',
      '/v1/namespaces/{ns}/vulnerabilities',
      '/v1/namespaces/{ns}/vulnerabilities/{name}/fixes/{feature}',
      '/v1/notifications/{name}',
      '/ancestry',
      '/ancestry/{ancestry_name}',
      '/notifications/{name}',
      '/status',
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    expect(doc.paths['/v1/layers'].post.requestBody).toBeDefined();
    const ui = await app.inject({ url: '/docs/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
  });
});
