/** A GitHub event's JSON, read field by field: what is not there, or not of the type asked, is empty. */
export type Payload = Record<string, unknown>;

export function field(value: Payload | undefined, key: string): Payload | undefined {
  const v = value?.[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Payload) : undefined;
}

export function text(value: Payload | undefined, key: string): string {
  const v = value?.[key];
  return typeof v === 'string' ? v : '';
}
