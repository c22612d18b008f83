import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs';

/**
 * A strict reading of a protobuf message's wire format against its type, before protobufjs
 * decodes it: protobufjs reads a field by its declared type whatever wire type the bytes carry
 * and does not check UTF-8, so some undecodable requests would fail deep in its reader and others
 * would pass as garbage. Here every tag, varint, length and nested message is checked, a declared
 * field must come with its own wire type (or packed, for a repeated number), and a string field
 * (map keys and values included) must be valid UTF-8, as proto3 requires. Unknown fields are
 * skipped, as every protobuf parser does.
 */

const WIRE_NAMES = ['varint', '64-bit', 'length-delimited', 'start-group', 'end-group', '32-bit'] as const;
const MAX_FIELD_NUMBER = 2 ** 29 - 1;
/** Nested messages (and groups of unknown fields) deeper than this are refused, as protobuf's own parsers do. */
const MAX_DEPTH = 100;

/** Why bytes are not a message; thrown inside the reader only. */
class WireProblem extends Error {}

/** What a field's bytes must be. */
interface FieldRule {
  readonly name: string;
  /** The wire type its values come with (2 for strings, bytes, messages and map entries). */
  readonly wire: number;
  /** A repeated number may also come packed: one length-delimited run of values of this wire type. */
  readonly packed?: number;
  readonly utf8?: boolean;
  readonly fields?: (fieldNumber: number) => FieldRule | undefined;
}

const wireTypeOf = (type: string): number | undefined => (protobuf.types.basic as Record<string, number | undefined>)[type];

function ruleOf(field: protobuf.Field): FieldRule {
  field.resolve();
  const name = field.name;
  if (field instanceof protobuf.MapField) {
    const key = { name: `${name} key`, wire: wireTypeOf(field.keyType) ?? 2, utf8: field.keyType === 'string' };
    const value = valueRule(`${name} value`, field);
    return { name, wire: 2, fields: (n) => (n === 1 ? key : n === 2 ? value : undefined) };
  }
  const rule = valueRule(name, field);
  const packed = field.repeated && rule.fields === undefined && rule.wire !== 2 ? rule.wire : undefined;
  return packed === undefined ? rule : { ...rule, packed };
}

function valueRule(name: string, field: protobuf.Field): FieldRule {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return { name, wire: 2, fields: messageRules(resolved) };
  if (resolved instanceof protobuf.Enum) return { name, wire: 0 };
  return { name, wire: wireTypeOf(field.type) ?? 2, utf8: field.type === 'string' };
}

const RULES = new WeakMap<protobuf.Type, Map<number, FieldRule>>();

/** A message type's fields by number, read from the type on first use (types may nest themselves). */
function messageRules(type: protobuf.Type): (fieldNumber: number) => FieldRule | undefined {
  return (fieldNumber) => {
    let rules = RULES.get(type);
    if (!rules) RULES.set(type, (rules = new Map(type.fieldsArray.map((f) => [f.id, ruleOf(f)]))));
    return rules.get(fieldNumber);
  };
}

class Reader {
  #pos: number;

  constructor(
    readonly bytes: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.#pos = start;
  }

  get done(): boolean {
    return this.#pos >= this.end;
  }

  get pos(): number {
    return this.#pos;
  }

  varint(what: string): number {
    let value = 0;
    for (let i = 0; i < 10; i++) {
      if (this.#pos >= this.end) throw new WireProblem(`${what} is cut short (a varint without its last byte)`);
      const byte = this.bytes[this.#pos++]!;
      if (i === 9 && byte > 1) throw new WireProblem(`${what} is a varint larger than 64 bits`);
      value += (byte & 0x7f) * 2 ** (7 * i);
      if (byte < 0x80) return value;
    }
    throw new WireProblem(`${what} is a varint longer than 10 bytes`);
  }

  skip(count: number, what: string): void {
    if (count > this.end - this.#pos)
      throw new WireProblem(`${what} is cut short (${count} bytes announced, ${this.end - this.#pos} left)`);
    this.#pos += count;
  }
}

/** Reads one message's fields from reader until its end (or, in a group, until the group's end tag). */
function readFields(reader: Reader, fields: FieldRule['fields'], path: string, depth: number, group?: number): void {
  if (depth > MAX_DEPTH) throw new WireProblem(`messages (or groups) are nested deeper than ${MAX_DEPTH} levels`);
  while (!reader.done) {
    const at = `${path || 'the message'} at byte ${reader.pos}`;
    const tag = reader.varint(`a field tag in ${at}`);
    const fieldNumber = Math.floor(tag / 8);
    const wire = tag % 8;
    if (fieldNumber < 1 || fieldNumber > MAX_FIELD_NUMBER)
      throw new WireProblem(`${at} has a field number ${fieldNumber}, outside 1 to ${MAX_FIELD_NUMBER}`);
    if (wire > 5) throw new WireProblem(`${at}: field ${fieldNumber} has wire type ${wire}, which does not exist`);
    if (wire === 4) {
      if (group === fieldNumber) return;
      throw new WireProblem(`${at}: field ${fieldNumber} ends a group that was not started`);
    }
    const rule = fields?.(fieldNumber);
    const name = rule ? `${path ? `${path}.` : ''}${rule.name}` : `${path ? `${path}.` : ''}field ${fieldNumber}`;
    if (rule && wire !== rule.wire && !(wire === 2 && rule.packed !== undefined)) {
      throw new WireProblem(
        `${name} (field ${fieldNumber}) has wire type ${WIRE_NAMES[wire]}, not ${WIRE_NAMES[rule.wire]} as its type needs`,
      );
    }
    readValue(reader, wire, rule, name, fieldNumber, depth);
  }
  if (group !== undefined) throw new WireProblem(`${path || 'the message'}: the group of field ${group} has no end`);
}

function readValue(reader: Reader, wire: number, rule: FieldRule | undefined, name: string, fieldNumber: number, depth: number): void {
  switch (wire) {
    case 0:
      reader.varint(name);
      return;
    case 1:
      reader.skip(8, name);
      return;
    case 5:
      reader.skip(4, name);
      return;
    case 3:
      readFields(reader, undefined, name, depth + 1, fieldNumber);
      return;
    default:
      break;
  }
  const length = reader.varint(`the length of ${name}`);
  const start = reader.pos;
  reader.skip(length, name);
  const bytes = reader.bytes.subarray(start, start + length);
  if (rule?.fields) readFields(new Reader(reader.bytes, start, start + length), rule.fields, name, depth + 1);
  else if (rule?.utf8 && !isUtf8(bytes)) throw new WireProblem(`${name} is not valid UTF-8`);
  else if (rule?.packed !== undefined) readPacked(new Reader(reader.bytes, start, start + length), rule.packed, name);
}

function readPacked(reader: Reader, wire: number, name: string): void {
  while (!reader.done) readValue(reader, wire, undefined, name, 0, 0);
}

/** Undefined when bytes are a well-formed message of type; else what is wrong with them, for a person. */
export function wireProblem(type: protobuf.Type, bytes: Uint8Array): string | undefined {
  try {
    readFields(new Reader(bytes, 0, bytes.length), messageRules(type), '', 0);
    return undefined;
  } catch (err) {
    if (err instanceof WireProblem) return err.message;
    throw err;
  }
}
