/**
 * Validation messages: what a client reads when a request fails its route's schema. Each says
 * "must" once, then what is wanted, whatever the schema keyword that failed.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import { describe, expect, it } from 'vitest';
import { compileValidator, validationMessage } from '../../src/api/validation.js';
import { json, testApp } from '../helpers/app.js';

/** The message for value checked against schema as part of a request. */
function messageFor(schema: TSchema, value: unknown, part = 'body'): string {
  const validate = compileValidator({ schema, httpPart: part });
  expect(validate(value), JSON.stringify(value)).toBe(false);
  return validationMessage(validate.errors as unknown as FastifySchemaValidationError[], part);
}

describe('validation messages', () => {
  it('say "must" once, for every schema keyword', () => {
    const cases: Array<[TSchema, unknown, string]> = [
      [
        Type.Object({ digest: Type.String({ pattern: '^sha256:[a-f0-9]{64}$' }) }),
        { digest: 'md5:1' },
        'digest must match the pattern ^sha256:[a-f0-9]{64}$ (got "md5:1")',
      ],
      [Type.Object({ list: Type.Array(Type.String(), { minItems: 1 }) }), { list: [] }, 'list must NOT have fewer than 1 items'],
      [
        Type.Object({ list: Type.Array(Type.Integer(), { uniqueItems: true }) }),
        { list: [1, 1] },
        'list must NOT have duplicate items (items ## 1 and 0 are identical)',
      ],
      [Type.Object({ n: Type.Integer({ multipleOf: 5 }) }), { n: 7 }, 'n must be multiple of 5 (got 7)'],
      [Type.Object({ kind: Type.Literal('layer') }), { kind: 'image' }, 'kind must be equal to constant (got "image")'],
      [Type.Object({ a: Type.String() }, { additionalProperties: false }), { a: 'x', b: 1 }, 'request body must not have the field b'],
      [Type.Object({ name: Type.String({ minLength: 1 }) }), { name: '' }, 'name must be a non-empty string (got "")'],
      [
        Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 1000 }) }),
        { limit: 0 },
        'limit must be an integer from 1 to 1000 (got 0)',
      ],
      [Type.Object({ n: Type.Union([Type.String(), Type.Integer()]) }), { n: true }, 'n must be a string or an integer (got true)'],
    ];
    for (const [schema, value, message] of cases) {
      const text = messageFor(schema, value);
      expect(text).toBe(message);
      expect(text).not.toMatch(/must (be )?must/);
    }
    expect(messageFor(Type.Object({ digest: Type.String({ pattern: '^sha256:' }) }), { digest: 'x' }, 'params')).toBe(
      'path parameter digest must match the pattern ^sha256: (got "x")',
    );
  });

  it('read once in the answer to a path parameter that does not match its pattern', async () => {
    const t = await testApp();
    const res = await t.app.inject({ url: '/tarsier/v1/images/sha256:xyz' });
    expect(res.statusCode).toBe(400);
    expect(json(res).Error.Message).toBe('path parameter digest must match the pattern ^sha256:[a-f0-9]{64}$ (got "sha256:xyz")');
  });
});
