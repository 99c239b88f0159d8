/**
 * Takes stet's own `schema` parameter off a PostgreSQL URL; the rest goes to the driver. A text
 * that is not a URL (a libpq key=value string) is left as it is.
 *
 * @example splitSchema("postgres://db/evals?schema=stet") // { url: "postgres://db/evals", schema: "stet" }
 */
export function splitSchema(location: string): { url: string; schema?: string } {
  let parsed: URL;
  try {
    parsed = new URL(location);
  } catch {
    return { url: location };
  }
  const schema = parsed.searchParams.get("schema") ?? undefined;
  if (schema === undefined) return { url: location };
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema };
}
