/**
 * The API's request limits, in one place: the routes' schemas, the router, the body parser, the
 * error messages and the OpenAPI document all read them from here.
 */

/** Clair read at most 1 MiB of a request body; so do we. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The largest SBOM a client may post: a document lists about a KiB per component (Trivy's, npm's
 * and cyclonedx-npm's alike), so this holds tens of thousands of them, more than the largest
 * images have, while one request still cannot hold much of the server's memory.
 */
export const SBOM_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

/**
 * How deep a request body's JSON may nest. The deepest body a client needs is a vulnerability's
 * Metadata (`{"Vulnerability":{"Metadata":{"NVD":{"CVSSv3":{"Score":…}}}}}`, five levels); a
 * deeper document is refused before it reaches the store, whose JSON functions have their own,
 * lower, recursion limits.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * The longest name (layer, ancestry, notification, namespace, vulnerability, feature), in
 * characters, in a path (after percent-decoding) or a body. klar names layers with 128 hex
 * characters and Quay with 101; Node's 16 KiB request line leaves room for 1,024 characters even
 * when each is percent-encoded.
 */
export const MAX_NAME_LENGTH = 1024;

/** The most items a page of a list may hold (v1 vulnerability lists, notifications of both APIs). */
export const MAX_PAGE_LIMIT = 1000;

/** Items per page of a notification (each side) when the client names no limit. */
export const DEFAULT_NOTIFICATION_PAGE = 100;
