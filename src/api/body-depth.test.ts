import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { bodyDepthLimit, depthAllowedBy, MAX_BODY_DEPTH, nestsDeeperThan } from './body-depth.ts';

describe('nestsDeeperThan', () => {
  it('counts objects and arrays outside strings, and stops at the first level past the limit', () => {
    expect(nestsDeeperThan('{"data":{"item":{"a":1}}}', 3)).toBe(false);
    expect(nestsDeeperThan('{"data":{"item":{"a":[1]}}}', 3)).toBe(true);
    expect(nestsDeeperThan('[[[]],[[]]]', 3)).toBe(false);
    // Brackets in strings are text, also after escaped quotes and backslashes.
    expect(nestsDeeperThan('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(nestsDeeperThan('{"a":"x\\"[[[[","b":"\\\\"}', 1)).toBe(false);
    expect(nestsDeeperThan('{"a":"\\\\","b":[[1]]}', 2)).toBe(true);
    // A string never closed hides the rest: JSON.parse refuses that text anyway.
    expect(nestsDeeperThan('{"a":"[[[[', 1)).toBe(false);
    // Millions of levels: refused at the sixth character (whatever follows, here text that is not JSON).
    expect(nestsDeeperThan(`${'['.repeat(6)}${'not json '.repeat(1_000_000)}`, 5)).toBe(true);
  });
});

describe('depthAllowedBy', () => {
  it('is the deepest nesting a valid body has; open schemas are unbounded and fall back to MAX_BODY_DEPTH', () => {
    const item = Type.Object({ a: Type.String(), b: Type.Optional(Type.Array(Type.Integer())) }, { additionalProperties: false });
    const body = Type.Object(
      { context: Type.Optional(Type.String()), data: Type.Object({ item }, { additionalProperties: false }) },
      { additionalProperties: false },
    );
    expect(depthAllowedBy(body)).toBe(4);
    expect(depthAllowedBy(Type.Union([Type.String(), Type.Array(Type.Array(Type.String()))]))).toBe(2);
    expect(depthAllowedBy(Type.Object({ x: Type.Unknown() }))).toBe(Number.POSITIVE_INFINITY);
    expect(bodyDepthLimit(Type.Object({ x: Type.Unknown() }))).toBe(MAX_BODY_DEPTH);
    expect(bodyDepthLimit(undefined)).toBe(MAX_BODY_DEPTH);
    // Two levels of slack: a small object where a string is expected still reaches the schema's message.
    expect(bodyDepthLimit(body)).toBe(6);
  });
});
