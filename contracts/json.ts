/** JSON values as both sides read them from the wire. */

export type JsonObject = Record<string, unknown>;

/** A parsed JSON value that is an object (not null, not an array). */
export const isJsonObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);
