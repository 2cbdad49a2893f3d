import {
  Struct,
  array as ssArray,
  boolean as ssBoolean,
  enums as ssEnums,
  integer as ssInteger,
  nullable as ssNullable,
  number as ssNumber,
  object as ssObject,
  optional as ssOptional,
  record as ssRecord,
  refine,
  size,
  string as ssString,
  type Describe,
  type Infer,
} from 'superstruct';

/**
 * Superstruct builders that remember their JSON Schema, so the structs that validate requests
 * are also the source of the OpenAPI document: one definition, no drift.
 */
export type JsonSchema = Record<string, unknown>;

const schemas = new WeakMap<Struct<any, any>, JsonSchema>();
const optionals = new WeakSet<Struct<any, any>>();

/**
 * `struct`, with values that pass `applies` coerced first. Superstruct's own `coerce` asks its
 * condition with `is()`, which builds a StructError (a stack trace) for every value that does not
 * pass: each absent optional query field, on every request. That was 6% of the API's CPU time on
 * a member's reads (bench:scale profile); a type guard costs nothing.
 */
function coerceWhen<T, S, C>(struct: Struct<T, S>, applies: (value: unknown) => value is C, coercer: (value: C) => unknown): Struct<T, S> {
  return new Struct({ ...struct, coercer: (value, context) => struct.coercer(applies(value) ? coercer(value) : value, context) });
}

const isString = (value: unknown): value is string => typeof value === 'string';

function tag<T, S>(struct: Struct<T, S>, schema: JsonSchema): Struct<T, S> {
  schemas.set(struct, schema);
  return struct;
}

interface TextBounds {
  min?: number;
  max: number;
  /** A business rule beyond the pattern, with the message to show when it fails. */
  check?: { test: (value: string) => boolean; message: string };
  format?: string;
  description?: string;
  example?: string;
}

/**
 * A pattern comes with the rule in words: a client is told what is wrong ("letters, digits and
 * underscores"), never shown a regular expression. The pattern itself stays in the OpenAPI document.
 */
export type TextOptions = TextBounds & ({ pattern?: undefined; patternMessage?: undefined } | { pattern: RegExp; patternMessage: string });

/** A string with a required upper bound: every string a client sends has a limit. */
export function text(options: TextOptions): Struct<string, null> {
  // PostgreSQL text cannot hold NUL; refusing it here keeps it from ever reaching a query.
  let struct: Struct<string, null> = refine(size(ssString(), options.min ?? 0, options.max), 'no_nul', (value) =>
    !value.includes('\u0000') || 'must not contain NUL characters',
  );
  if (options.pattern) {
    const { pattern, patternMessage } = options;
    struct = refine(struct, 'pattern', (value) => pattern.test(value) || patternMessage);
  }
  if (options.check) {
    const check = options.check;
    struct = refine(struct, 'rule', (value) => check.test(value) || check.message);
  }
  return tag(struct, {
    type: 'string',
    ...(options.min ? { minLength: options.min } : {}),
    maxLength: options.max,
    ...(options.pattern ? { pattern: options.pattern.source } : {}),
    ...(options.format ? { format: options.format } : {}),
    ...(options.description ? { description: options.description } : {}),
    ...(options.example ? { examples: [options.example] } : {}),
  });
}

/** A date-time in responses (ISO 8601). */
export function dateTime(description?: string): Struct<string, null> {
  return tag(ssString(), { type: 'string', format: 'date-time', ...(description ? { description } : {}) });
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * A UUID, lower-cased on the way in (UUIDs are case-insensitive; comparisons downstream are not).
 * `refuseNil` for ids a caller chooses: the all-zero UUID is a placeholder, not an id.
 */
export function uuid(description?: string, options: { refuseNil?: boolean } = {}): Struct<string, null> {
  let checked = refine(ssString(), 'uuid', (value) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value) || 'must be a UUID');
  if (options.refuseNil) checked = refine(checked, 'not_nil', (value) => value !== NIL_UUID || 'must not be the nil UUID');
  return tag(coerceWhen(checked, isString, (value) => value.toLowerCase()), {
    type: 'string',
    format: 'uuid',
    ...(description ? { description } : {}),
  });
}

/** One of `values`; a failure lists them (superstruct's own message echoes the value sent). */
export function oneOf<const T extends readonly string[]>(values: T, description?: string) {
  const allowed: readonly unknown[] = values;
  const listed = values.join(', ');
  const enums = ssEnums(values as unknown as T[number][]);
  const struct = new Struct({ ...enums, validator: (value) => allowed.includes(value) || `must be one of ${listed}` });
  return tag(struct, {
    type: 'string',
    enum: [...values],
    ...(description ? { description } : {}),
  });
}

export function bool(description?: string): Struct<boolean, null> {
  return tag(ssBoolean(), { type: 'boolean', ...(description ? { description } : {}) });
}

/**
 * A boolean in a query string, which carries text: `true` or `false` (nothing else) arrive as a
 * boolean, and the OpenAPI document says boolean.
 */
export function queryBoolean(description?: string): Struct<boolean, null> {
  return tag(coerceWhen(ssBoolean(), (value): value is 'true' | 'false' => value === 'true' || value === 'false', (value) => value === 'true'), {
    type: 'boolean',
    ...(description ? { description } : {}),
  });
}

/**
 * A whole number in a query string, within `min` and `max`: digits only (no sign, no exponent), so
 * `limit=1e3` or `limit=-1` are refused rather than read as something else.
 */
export function queryInteger(options: { min: number; max: number; description?: string }): Struct<number, null> {
  const parsed = coerceWhen(ssInteger(), isString, (value) => (/^[0-9]{1,9}$/.test(value) ? Number(value) : value));
  const bounded = refine(parsed, 'range', (value) => (value >= options.min && value <= options.max) || `must be ${options.min} to ${options.max}`);
  return tag(bounded, {
    type: 'integer',
    minimum: options.min,
    maximum: options.max,
    ...(options.description ? { description: options.description } : {}),
  });
}

export function num(description?: string): Struct<number, null> {
  return tag(ssNumber(), { type: 'number', ...(description ? { description } : {}) });
}

export function int(description?: string): Struct<number, null> {
  return tag(ssInteger(), { type: 'integer', ...(description ? { description } : {}) });
}

export function arrayOf<T>(item: Struct<T, any>, description?: string): Struct<T[], Struct<T, any>> {
  return tag(ssArray(item), { type: 'array', items: toJsonSchema(item), ...(description ? { description } : {}) });
}

export function optional<T, S>(struct: Struct<T, S>): Struct<T | undefined, S> {
  const wrapped = ssOptional(struct);
  schemas.set(wrapped, toJsonSchema(struct));
  optionals.add(wrapped);
  return wrapped;
}

/** Whether `optional` made the struct: an optional request body is documented as not required. */
export function isOptional(struct: Struct<any, any>): boolean {
  return optionals.has(struct);
}

export function nullable<T, S>(struct: Struct<T, S>): Struct<T | null, S> {
  const inner = toJsonSchema(struct);
  const types = [inner.type].flat();
  return tag(ssNullable(struct), {
    ...inner,
    type: types.includes('null') ? types : [...types, 'null'],
    ...(Array.isArray(inner.enum) && !inner.enum.includes(null) ? { enum: [...inner.enum, null] } : {}),
  });
}

/** An object that refuses unknown keys, so a misspelt field is an error rather than ignored. */
export function record<const S extends Record<string, Struct<any, any>>>(shape: S, description?: string) {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [key, struct] of Object.entries(shape)) {
    properties[key] = toJsonSchema(struct);
    if (!optionals.has(struct)) required.push(key);
  }
  return tag(ssObject(shape), {
    type: 'object',
    properties,
    required,
    additionalProperties: false,
    ...(description ? { description } : {}),
  });
}

/** An object whose keys are open (names a client chooses), each value of one shape. */
export function mapOf<T>(value: Struct<T, any>, description?: string): Struct<Record<string, T>, null> {
  return tag(ssRecord(ssString(), value), { type: 'object', additionalProperties: toJsonSchema(value), ...(description ? { description } : {}) });
}

export function toJsonSchema(struct: Struct<any, any>): JsonSchema {
  const schema = schemas.get(struct);
  if (!schema) throw new Error(`struct of type '${struct.type}' was not built with the http schema builders`);
  return schema;
}

export type { Describe, Infer };
