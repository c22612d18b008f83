import { createHash } from 'node:crypto';

/** A short digest of JSON data (sha256, 16 hex digits): equal data, equal digest; any change, another. */
export const digestOf = (data: unknown): string => createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 16);
