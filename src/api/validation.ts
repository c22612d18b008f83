import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

/**
 * Request validation: the route schemas are checked by Ajv before any handler runs, so a request
 * answered 400 has done nothing. Bodies are checked as sent (`{"Name": 1}` is a client error, as
 * it was in Clair); query strings, path parameters and headers arrive as text and are coerced to
 * the schema's type (`?limit=10` is the integer 10). The messages name the part of the request and
 * say what was expected.
 */

/** The parts of a request Fastify validates. */
type HttpPart = 'body' | 'querystring' | 'params' | 'headers';

const common = { useDefaults: true, allErrors: false, verbose: true, strict: true } as const;
const asSent = new Ajv({ ...common, coerceTypes: false });
const fromText = new Ajv({ ...common, coerceTypes: true });
// OpenAPI keywords that route schemas carry for the document; Ajv ignores them.
for (const ajv of [asSent, fromText]) ajv.addKeyword('example');

/** Fastify's validator compiler: one Ajv for bodies, one that coerces text for the other parts. */
export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }): ValidateFunction {
  return (httpPart === 'body' || httpPart === undefined ? asSent : fromText).compile(schema);
}

const TYPE_NAMES: Readonly<Record<string, string>> = {
  object: 'a JSON object',
  array: 'a list',
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  null: 'null',
};

/** Where a value sits: Layer.Name, FixedIn[0].Version, limit. */
function fieldPath(instancePath: string, child?: string): string {
  const segments = instancePath.split('/').slice(1);
  if (child !== undefined) segments.push(child);
  return segments.reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : path === '' ? s : `${path}.${s}`), '');
}

function label(part: HttpPart, path: string): string {
  switch (part) {
    case 'querystring':
      return `query parameter ${path}`;
    case 'headers':
      // Header names arrive lower-cased; write them as clients spell them (X-Clair-Api-Revision).
      return `header ${path.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase())}`;
    case 'params':
      return `path parameter ${path}`;
    default:
      return path === '' ? 'request body' : path;
  }
}

/** A value as shown in a message: JSON, cut short. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * What the failed schema asks of the value, in words that follow "must": "be a string", "match
 * the pattern ^sha256:…$". Ajv's own messages all start with "must", so any keyword without words
 * of its own reads as Ajv says it, without the "must" written twice.
 */
function requirement(error: ErrorObject, siblings: readonly ErrorObject[]): string {
  const schema = (error.parentSchema ?? {}) as Record<string, unknown>;
  const range =
    typeof schema.minimum === 'number' && typeof schema.maximum === 'number'
      ? `be ${schema.type === 'integer' ? 'an integer' : 'a number'} from ${schema.minimum} to ${schema.maximum}`
      : undefined;
  if (error.keyword === 'type' && range) return range;
  switch (error.keyword) {
    case 'type':
    case 'anyOf': {
      // A union reports one type error per branch, then anyOf: name every accepted type.
      const types = siblings
        .filter((e) => e.keyword === 'type' && e.instancePath === error.instancePath)
        .map((e) => TYPE_NAMES[String(e.params.type)] ?? String(e.params.type));
      return types.length > 0 ? `be ${[...new Set(types)].join(' or ')}` : ajvRequirement(error);
    }
    case 'minimum':
    case 'maximum':
      if (range) return range;
      return `be ${error.keyword === 'minimum' ? 'at least' : 'at most'} ${String(error.params.limit)}`;
    case 'maxLength':
      return `be at most ${String(error.params.limit)} characters long`;
    case 'minLength':
      return error.params.limit === 1 ? 'be a non-empty string' : `be at least ${String(error.params.limit)} characters long`;
    case 'enum':
      return `be one of ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'pattern':
      return `match the pattern ${String(error.params.pattern)}`;
    case 'additionalProperties':
      return `not have the field ${String(error.params.additionalProperty)}`;
    default:
      return ajvRequirement(error);
  }
}

/** Ajv's message for an error ("must NOT have fewer than 1 items") without its leading "must". */
function ajvRequirement(error: ErrorObject): string {
  return (error.message ?? 'be valid').replace(/^must\s+/, '');
}

/**
 * The message for a request that failed its schema (Fastify's schemaErrorFormatter): names the
 * field and the part of the request it is in, says what was expected and shows what was given.
 */
export function validationMessage(errors: readonly FastifySchemaValidationError[], part: string): string {
  const all = errors as unknown as readonly ErrorObject[];
  // A union reports its branches' errors, then anyOf. A branch that failed deeper inside the
  // value had the right type: its error is the one to show; else anyOf stands for the field.
  const union = all.find((e) => e.keyword === 'anyOf');
  const deeper = union && all.find((e) => e.instancePath.length > union.instancePath.length);
  const error = deeper ?? union ?? all[0];
  const where = (part as HttpPart) ?? 'body';
  if (!error) return `${label(where, '')} is not valid`;
  if (error.keyword === 'required') {
    const missing = fieldPath(error.instancePath, String(error.params.missingProperty));
    return `${label(where, missing)} is required`;
  }
  const path = fieldPath(error.instancePath);
  if (where === 'body' && path === '' && (error.data === undefined || error.data === null))
    return 'request body is empty: send a JSON object';
  const given = error.data === undefined || (typeof error.data === 'object' && error.data !== null) ? '' : ` (got ${shown(error.data)})`;
  return `${label(where, path)} must ${requirement(error, all)}${given}`;
}
