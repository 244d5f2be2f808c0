/**
 * Request validation: two Ajv instances (bodies are never coerced, query strings are), and the mapping
 * from Ajv's errors to the contract's error codes, with one detail per offending attribute.
 */

import AjvModule, { type ErrorObject } from 'ajv';
import { ApiError, type ErrorCode, type ErrorDetail } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { BULK_MAX_ITEMS } from '../services/bulk-subscriptions.ts';
import { pullOnlyConflict } from '../services/subscriptions.ts';

// ajv is CommonJS: under NodeNext its class is the default export's `default`.
const Ajv = AjvModule.default;
const common = { allErrors: true, removeAdditional: false, strict: false, messages: true } as const;
const bodyAjv = new Ajv({ ...common, coerceTypes: false, useDefaults: false });
const queryAjv = new Ajv({ ...common, coerceTypes: true, useDefaults: true });
for (const ajv of [bodyAjv, queryAjv]) ajv.addFormat('uuid', { type: 'string', validate: isUuid });

export function validatorCompiler({ schema, httpPart }: { schema: object; httpPart?: string }) {
  return (httpPart === 'body' ? bodyAjv : queryAjv).compile(schema);
}

/** '/data/item/callbackUrl' -> 'callbackUrl'; the attribute a client recognises. */
function attributeOf(error: ErrorObject, prefix: string): string {
  const path = error.instancePath.startsWith(prefix) ? error.instancePath.slice(prefix.length) : error.instancePath;
  const extra = error.params as { missingProperty?: string; additionalProperty?: string };
  const leaf = extra.missingProperty ?? extra.additionalProperty;
  const parts = path.split('/').filter(Boolean);
  if (leaf) parts.push(leaf);
  return parts.join('.') || '(body)';
}

function sentence(error: ErrorObject, attribute: string): string {
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `The attribute '${attribute}' is required.`;
    case 'additionalProperties':
      return `The attribute '${attribute}' is not accepted here; remove it.`;
    case 'type':
      // "False" or "true" for a boolean: say that only the JSON literals are taken.
      if (p.type === 'boolean') return `The attribute '${attribute}' must be a boolean: true or false, without quotes.`;
      return `The attribute '${attribute}' must be of type ${String(p.type)}.`;
    case 'enum':
      return `The attribute '${attribute}' must be ${oneOfValues(p.allowedValues as unknown[])}.`;
    case 'maxLength':
      return `The attribute '${attribute}' must be at most ${String(p.limit)} characters long.`;
    case 'minLength':
      return `The attribute '${attribute}' must not be empty.`;
    case 'minimum':
      return `The attribute '${attribute}' must be at least ${String(p.limit)}.`;
    case 'maximum':
      return `The attribute '${attribute}' must be at most ${String(p.limit)}.`;
    case 'not':
      // The only `not` of the item schemas: an attribute refused beside pullOnly: true (schemas.ts deliveryRule).
      return pullOnlyConflict(attribute);
    case 'alternatives':
      return `The attribute '${attribute}' must be ${(p.forms as string[]).join(', or ')}.`;
    default:
      return `The attribute '${attribute}' ${error.message ?? 'is invalid'}.`;
  }
}

/** The values of an enum for a sentence: `one of "a", "b" or "c"`; strings say so, and that they are lower case (a "False" is refused). */
function oneOfValues(values: unknown[]): string {
  const shown = values.map((v) => JSON.stringify(v));
  const list = shown.length > 1 ? `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}` : (shown[0] ?? '');
  if (!values.every((v): v is string => typeof v === 'string')) return shown.length > 1 ? `one of ${list}` : list;
  const lowerCase = values.every((v) => v === v.toLowerCase()) && values.some((v) => /[a-z]/.test(v));
  return `${shown.length > 1 ? 'one of the strings' : 'the string'} ${list}${lowerCase ? ' (in lower case)' : ''}`;
}

/** What one branch of an anyOf accepts, from the error it gave (a type or an enum); undefined for any other branch. */
function alternative(error: ErrorObject): string | undefined {
  const p = error.params as Record<string, unknown>;
  if (error.keyword === 'type') return p.type === 'boolean' ? 'a JSON boolean (true or false, without quotes)' : `a ${String(p.type)}`;
  if (error.keyword === 'enum') return oneOfValues(p.allowedValues as unknown[]);
  return undefined;
}

/**
 * An attribute that may take several forms (anyOf: a boolean or the strings "true"/"false") fails each
 * form with an error of its own; they become one error that lists every accepted form, instead of the
 * first form's alone ("must be of type boolean" for a string that was nearly right).
 */
function mergeAlternatives(errors: ErrorObject[]): ErrorObject[] {
  const anyOfs = errors.filter((e) => e.keyword === 'anyOf');
  if (anyOfs.length === 0) return errors;
  const branchOf = (e: ErrorObject) => anyOfs.find((a) => e !== a && e.instancePath === a.instancePath && e.schemaPath.startsWith(`${a.schemaPath}/`));
  const out: ErrorObject[] = [];
  for (const e of errors) {
    if (branchOf(e)) continue;
    if (e.keyword !== 'anyOf') {
      out.push(e);
      continue;
    }
    const forms = errors.filter((b) => branchOf(b) === e).map(alternative);
    if (forms.length === 0 || forms.some((f) => f === undefined)) out.push(e, ...errors.filter((b) => branchOf(b) === e));
    else out.push({ ...e, keyword: 'alternatives', params: { forms } });
  }
  return out;
}

function uniqueDetails(details: ErrorDetail[]): ErrorDetail[] {
  const byAttribute = new Map<string, ErrorDetail>();
  for (const d of details) if (!byAttribute.has(d.attribute)) byAttribute.set(d.attribute, d);
  return [...byAttribute.values()];
}

const ITEM = '/data/item';

function isStructural(e: ErrorObject): boolean {
  if (e.instancePath.startsWith(`${ITEM}/`)) return false;
  if (e.instancePath === ITEM) return e.keyword === 'type';
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  if (e.keyword === 'required') return missing === 'data' || missing === 'item';
  if (e.instancePath === '/context') return false;
  return e.keyword !== 'additionalProperties' || e.instancePath === '/data';
}

function bodyError(allErrors: ErrorObject[]): ApiError {
  // An if/then/else (schemas.ts deliveryRule) adds an error of its own beside its branch's: the branch's says what to change.
  const errors = mergeAlternatives(allErrors.filter((e) => e.keyword !== 'if'));
  if (errors.some(isStructural)) {
    const bulk = errors.some((e) => e.instancePath.startsWith('/data/items') || (e.params as { missingProperty?: string }).missingProperty === 'items');
    return new ApiError(
      'invalid_request_body_structure',
      bulk
        ? `The request body must be a JSON object of the form { "context"?: string, "data": { "items": [ { ... }, ... ] } }, with 1 to ${BULK_MAX_ITEMS} items.`
        : 'The request body must be a JSON object of the form { "context"?: string, "data": { "item": { ... } } }.',
    );
  }
  const classified = errors.map((e) => {
    const attribute = attributeOf(e, e.instancePath.startsWith(ITEM) ? ITEM : '');
    const code: ErrorCode =
      e.keyword === 'required' ? 'missing_required_attributes' : e.keyword === 'additionalProperties' ? 'extra_body_attributes' : 'invalid_data';
    return { code, detail: { attribute, message: sentence(e, attribute) } };
  });
  const order: ErrorCode[] = ['missing_required_attributes', 'extra_body_attributes', 'invalid_data'];
  const code = order.find((c) => classified.some((x) => x.code === c)) as ErrorCode;
  const details = uniqueDetails(classified.map((x) => x.detail));
  return new ApiError(code, details[0]?.message ?? 'The request body is invalid.', details);
}

function queryError(errors: ErrorObject[]): ApiError {
  const details = uniqueDetails(errors.map((e) => ({ attribute: attributeOf(e, ''), message: sentence(e, attributeOf(e, '')) })));
  const pagination = errors.filter((e) => /^\/(limit|offset)$/.test(e.instancePath));
  if (errors.some((e) => e.keyword === 'additionalProperties')) {
    const extra = [...new Set(errors.filter((e) => e.keyword === 'additionalProperties').map((e) => attributeOf(e, '')))];
    return new ApiError('extra_query_attributes', `Unknown query parameter${extra.length > 1 ? 's' : ''}: ${extra.join(', ')}. Remove it.`, details);
  }
  const limitTooHigh = (e: ErrorObject) => e.instancePath === '/limit' && e.keyword === 'maximum';
  if (pagination.some((e) => !limitTooHigh(e))) {
    return new ApiError('invalid_pagination', 'limit must be an integer from 1 to 50 and offset an integer from 0 to 2147483647.', details);
  }
  // The endpoint's own maximum (50 on the lists, 1,000 on the event stream), from its schema.
  const maximum = (pagination.find(limitTooHigh)?.params as { limit?: number } | undefined)?.limit ?? 50;
  if (pagination.length > 0) return new ApiError('limit_greater_than_allowed', `limit must be at most ${maximum}.`, details);
  return new ApiError('invalid_data', details[0]?.message ?? 'A query parameter is invalid.', details);
}

function paramsError(errors: ErrorObject[]): ApiError {
  const details = uniqueDetails(
    errors.map((e) => {
      const attribute = attributeOf(e, '');
      return { attribute, message: `The ${attribute} in the path is not supported by this endpoint.` };
    }),
  );
  return new ApiError('uri_not_found', details[0]?.message ?? 'The path is not supported.', details);
}

/** Turns Fastify's validation failure into the contract's error. */
export function validationFailure(errors: ErrorObject[], part: string | undefined): ApiError {
  if (part === 'body') return bodyError(errors);
  if (part === 'querystring') return queryError(errors);
  return paramsError(errors);
}

/**
 * A validator of one item of a bulk create against its endpoint's item schema: undefined when valid,
 * else the error a single create of that item would get (attributes named as in the item).
 */
export function itemValidator(schema: object): (item: unknown) => ApiError | undefined {
  const validate = bodyAjv.compile(schema);
  return (item) => {
    if (validate(item)) return undefined;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      return new ApiError('invalid_request_body_structure', 'Each element of data.items must be a JSON object: the item of a single create.');
    }
    return bodyError((validate.errors ?? []).map((e) => ({ ...e, instancePath: `${ITEM}${e.instancePath}` })));
  };
}
