import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import ajvDraft04 from 'ajv-draft-04';
import ajvFormats from 'ajv-formats';

/**
 * Validators for the scan report's standard formats, against the official schemas vendored in
 * test/fixtures/schemas/ (see PROVENANCE.md there). Each returns the schema errors as
 * "path message" lines; an empty array means the document is valid.
 */

// Both are CommonJS modules whose types declare only a default export: from ESM that is `.default`.
const AjvDraft04 = ajvDraft04.default;
const addFormats = ajvFormats.default;

const SCHEMAS = new URL('../fixtures/schemas/', import.meta.url);

function schema(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(file, SCHEMAS), 'utf8')) as Record<string, unknown>;
}

function errorsOf(validate: ValidateFunction, doc: unknown): string[] {
  if (validate(doc)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`);
}

// The published SARIF 2.1.0 schema (errata 01) declares JSON Schema draft-04, which Ajv 8 reads
// only through ajv-draft-04.
const sarifAjv = new AjvDraft04({ allErrors: true });
addFormats(sarifAjv);
const sarif = sarifAjv.compile(schema('sarif-schema-2.1.0.json'));

// CycloneDX 1.6 is draft-07. Its `meta:enum` annotations (a description per enum value) are not a
// JSON Schema keyword, and ajv-formats has no IRI formats: declared here so strict mode accepts them.
const cyclonedxAjv = new Ajv({ allErrors: true });
addFormats(cyclonedxAjv);
cyclonedxAjv.addKeyword({ keyword: 'meta:enum', schemaType: 'object' });
// Any reference the WHATWG URL parser resolves (it takes non-ASCII characters, as IRIs allow).
cyclonedxAjv.addFormat('iri-reference', (value: string) => URL.canParse(value, 'http://base.invalid/'));
// An address with one @ and no spaces; the local part and domain may be non-ASCII.
cyclonedxAjv.addFormat('idn-email', /^[^\s@]+@[^\s@]+$/u);
// The BOM schema refers to these by relative id (spdx.schema.json, jsf-0.82.schema.json), which
// resolve against its $id to the ids they declare.
cyclonedxAjv.addSchema(schema('spdx.schema.json'));
cyclonedxAjv.addSchema(schema('jsf-0.82.schema.json'));
const cyclonedx = cyclonedxAjv.compile(schema('bom-1.6.schema.json'));

export function validateSarif(doc: unknown): string[] {
  return errorsOf(sarif, doc);
}

export function validateCycloneDx(doc: unknown): string[] {
  return errorsOf(cyclonedx, doc);
}
