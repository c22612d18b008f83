import { badRequest } from '../../errors.js';

/**
 * The proto3 JSON mapping as grpc-gateway (jsonpb with OrigName, EmitDefaults false) produced it:
 * output field names are the proto names (snake_case) and default values are left out; input
 * accepts the proto name or its lowerCamelCase JSON name, ignores unknown fields, and reads null
 * as the default value.
 */

type JsonObject = Record<string, unknown>;

const isPlainObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);

/** True for the values proto3 JSON leaves out: "", 0, false, empty lists and maps, absent ones. */
function isDefault(value: unknown): boolean {
  if (value === undefined || value === null || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isPlainObject(value)) return Object.keys(value).length === 0;
  return false;
}

/**
 * A message ready to send: every field holding a default value is removed, at every depth (a nested
 * message left with nothing but defaults goes too). The top-level object itself is always kept:
 * an empty message is `{}`.
 */
export function withoutDefaults<T extends JsonObject>(message: T): Partial<T> {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(message)) {
    const compacted = compact(value);
    if (!isDefault(compacted)) out[key] = compacted;
  }
  return out as Partial<T>;
}

function compact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (isPlainObject(item) ? withoutDefaults(item) : item));
  if (isPlainObject(value)) return withoutDefaults(value);
  return value;
}

/** lower_snake_case → lowerCamelCase, as protoc derives a field's JSON name. */
export function jsonName(protoName: string): string {
  return protoName.replace(/_([a-z0-9])/g, (_match, c: string) => c.toUpperCase());
}

/**
 * Where a message field is read from in an input object: the proto name (e.g. ancestry_name), else
 * its JSON name (ancestryName). `path` names the field in error messages (e.g. layers[2].path).
 */
function fieldValue(message: JsonObject, protoName: string): unknown {
  if (Object.hasOwn(message, protoName)) return message[protoName];
  const camel = jsonName(protoName);
  return Object.hasOwn(message, camel) ? message[camel] : undefined;
}

/** An input message: a JSON object (null or absent: the empty message). */
export function messageOf(value: unknown, path: string): JsonObject {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw badRequest(`${path} must be a JSON object`);
  return value;
}

const fieldPath = (parent: string, name: string): string => (parent === '' ? name : `${parent}.${name}`);

/** A string field ("" when absent or null). */
export function stringField(message: JsonObject, protoName: string, parent = ''): string {
  const value = fieldValue(message, protoName);
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw badRequest(`${fieldPath(parent, protoName)} must be a string`);
  return value;
}

/** A repeated message field ([] when absent or null); each element checked to be an object. */
export function messageListField(message: JsonObject, protoName: string, parent = ''): JsonObject[] {
  const value = fieldValue(message, protoName);
  const path = fieldPath(parent, protoName);
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest(`${path} must be a list`);
  return value.map((item, i) => {
    if (!isPlainObject(item)) throw badRequest(`${path}[${i}] must be a JSON object`);
    return item;
  });
}

/** A map<string, string> field ({} when absent or null). */
export function stringMapField(message: JsonObject, protoName: string, parent = ''): Record<string, string> {
  const value = fieldValue(message, protoName);
  const path = fieldPath(parent, protoName);
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw badRequest(`${path} must be an object mapping names to strings`);
  const out: Record<string, string> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (typeof inner !== 'string') {
      throw badRequest(`${path} must be an object mapping names to strings (${JSON.stringify(key)} is not a string)`);
    }
    out[key] = inner;
  }
  return out;
}

/** A google.protobuf.Timestamp: RFC 3339 in UTC, fractional seconds only when not zero. */
export function timestamp(date: Date | null | undefined): string | undefined {
  if (!date) return undefined;
  return date.toISOString().replace('.000Z', 'Z');
}

/** Times in notifications (strings in the proto): Unix seconds, as the v1 API writes them. */
export function unixSeconds(date: Date | null | undefined): string | undefined {
  return date ? String(Math.floor(date.getTime() / 1000)) : undefined;
}

/** A metadata object as the proto's string field: its JSON text; none (or an empty one) is the default. */
export function metadataText(metadata: Record<string, unknown> | null | undefined): string | undefined {
  return metadata && Object.keys(metadata).length > 0 ? JSON.stringify(metadata) : undefined;
}
