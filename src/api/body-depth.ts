/**
 * How deep a JSON request body may nest (docs/reference/api-overview.md). JSON.parse of a body nested millions of
 * levels deep (16 MiB of `[`) held the event loop for seconds and built half a gigabyte of arrays, all
 * before the schema could say the body was wrong. So the raw text is scanned first, counting the
 * nesting of objects and arrays outside strings, and refused at the first level deeper than the route's
 * schema allows: a hostile body costs a few characters' scan, not a parse.
 */

/** Bound for bodies whose schema does not bound their depth (routes that take no body, open objects), and for any body read only for its context. */
export const MAX_BODY_DEPTH = 32;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

/**
 * Whether the JSON text nests objects and arrays more than `limit` levels deep (a top-level object is
 * level 1). Text that is not valid JSON is scanned all the same: JSON.parse refuses it afterwards.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that closes the string opened at `open` (the text's length when none does). */
function closingQuote(text: string, open: number): number {
  // indexOf, not a loop over each character: most of a body is strings, and a native search is several times faster.
  for (let at = text.indexOf('"', open + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at; // an even run of backslashes escapes itself, not the quote
  }
  return text.length;
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  patternProperties?: Record<string, JsonSchema>;
  items?: JsonSchema | JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  const?: unknown;
  enum?: unknown[];
}

const SCALARS = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** The deepest nesting of objects and arrays a body valid for `schema` can have; Infinity where the schema leaves it open. */
export function depthAllowedBy(given: unknown): number {
  if (!given || typeof given !== 'object') return Number.POSITIVE_INFINITY;
  const schema = given as JsonSchema;
  const members = [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];
  if (members.length > 0) return Math.max(...members.map(depthAllowedBy));
  if (schema.allOf && schema.allOf.length > 0) return Math.min(...schema.allOf.map(depthAllowedBy));
  if (schema.const !== undefined || schema.enum !== undefined) return 1; // literal objects are not used in bodies; a level at most
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return Number.POSITIVE_INFINITY; // any value (Type.Unknown)
  let deepest = 0;
  for (const type of types) {
    if (SCALARS.has(type)) continue;
    if (type === 'array') {
      const items = Array.isArray(schema.items) ? schema.items : schema.items === undefined ? [] : [schema.items];
      deepest = Math.max(deepest, 1 + (schema.items === undefined ? Number.POSITIVE_INFINITY : Math.max(0, ...items.map(depthAllowedBy))));
    } else if (type === 'object') {
      const values = [...Object.values(schema.properties ?? {}), ...Object.values(schema.patternProperties ?? {})];
      const extra = schema.additionalProperties;
      const open = extra === undefined || extra === true ? Number.POSITIVE_INFINITY : extra === false ? 0 : depthAllowedBy(extra);
      deepest = Math.max(deepest, 1 + Math.max(open, 0, ...values.map(depthAllowedBy)));
    } else {
      return Number.POSITIVE_INFINITY;
    }
  }
  return deepest;
}

const routeLimits = new WeakMap<object, number>();

/**
 * Levels allowed beyond the schema's: an attribute given as a small object or array where a string is
 * expected still reaches the schema check, which names it (409 invalid_data), as before this limit.
 */
const SLACK = 2;

/** The depth a route's body may reach: what its schema allows (and SLACK), at most MAX_BODY_DEPTH (computed once per schema). */
export function bodyDepthLimit(bodySchema: unknown): number {
  if (!bodySchema || typeof bodySchema !== 'object') return MAX_BODY_DEPTH;
  let limit = routeLimits.get(bodySchema);
  if (limit === undefined) {
    limit = Math.min(MAX_BODY_DEPTH, depthAllowedBy(bodySchema) + SLACK);
    routeLimits.set(bodySchema, limit);
  }
  return limit;
}
