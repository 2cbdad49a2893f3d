const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a provider's text can be stored as is: well-formed Unicode (no lone surrogate, which
 * PostgreSQL's jsonb refuses) and no NUL (which its text refuses).
 */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && !LONE_SURROGATE.test(value);
}
