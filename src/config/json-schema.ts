/**
 * The JSON Schema of herald.config.json, generated from the one configuration definition (ConfigSchema in
 * ./config.ts): `herald config schema` prints it, deploy/herald.config.schema.json is its committed copy
 * (test/config-check.test.ts compares the two). Editors validate and complete a file that names it in
 * "$schema" (docs/operations/configuration-check.md).
 */
import { ConfigSchema } from './config.ts';

type JsonObject = { [key: string]: unknown };

/**
 * A property that has a default may be left out of the file (loadConfig fills it in before it validates):
 * the file's schema requires only those without one (a chain's blockchain and network).
 */
function fileForm(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(fileForm);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) out[key] = fileForm(value);
  if (out.type === 'object' && out.properties && Array.isArray(out.required)) {
    const properties = out.properties as Record<string, JsonObject>;
    const required = out.required.filter((name: string) => properties[name]?.default === undefined);
    if (required.length > 0) out.required = required;
    else delete out.required;
  }
  return out;
}

export function configJsonSchema(): JsonObject {
  // JSON.stringify keeps the standard keywords and drops TypeBox's own (symbol-keyed) markers.
  const schema = fileForm(JSON.parse(JSON.stringify(ConfigSchema))) as JsonObject;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'herald.config.json',
    description: 'The configuration file of herald (docs/operations/configuration-check.md). Environment variables and flags override it.',
    ...schema,
    properties: {
      $schema: { type: 'string', description: 'The schema this file follows, for editors; herald ignores it.' },
      ...(schema.properties as JsonObject),
    },
  };
}
