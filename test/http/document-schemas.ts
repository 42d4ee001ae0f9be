import { Ajv2020 } from "ajv/dist/2020.js";
import { createApp } from "../../src/index.ts";
import { openStore } from "../../src/node.ts";

// The request schemas of the server's own OpenAPI document, compiled by a
// JSON Schema 2020-12 validator (Ajv) as a spec-driven client or fuzzer would
// read them, so that a test can hold each request up to the document and to
// the server at once: what the document calls valid, the server must take.

/** The OpenAPI document the app serves (it reads nothing of the database, so one in memory serves); outside a test too. */
export async function servedDocument(): Promise<OpenApiDocument> {
  const store = await openStore({ url: ":memory:" });
  try {
    return (await (await createApp({ store, auth: "off" }).request("http://localhost/openapi.json")).json()) as OpenApiDocument;
  } finally {
    store.close();
  }
}

/** As much of an OpenAPI document as these tests read. */
export type OpenApiDocument = { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: object }[]; requestBody?: unknown }>> } & Record<string, unknown>;

/** JSON Pointer escaping of one segment. */
const pointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * Validators of `document`'s requests: `body(path, method)` of the JSON body
 * of an operation, `query(path, method, name)` of one of its parameters
 * (as the string a URL carries when its schema is a string). Each answers
 * whether a value is valid by the document, and the errors.
 */
export function documentSchemas(document: OpenApiDocument) {
  // Not strict: the document carries OpenAPI's keywords (example, x-maxDepth) beside JSON Schema's.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  ajv.addSchema(document, "openapi.json");
  const compiled = (ref: string) => {
    const validate = ajv.compile({ $ref: `openapi.json#${ref}` });
    return (value: unknown) => ({ valid: validate(value) as boolean, errors: JSON.stringify(validate.errors ?? []) });
  };
  return {
    body: (path: string, method: string) => compiled(`/paths/${pointer(path)}/${method}/requestBody/content/application~1json/schema`),
    query: (path: string, method: string, name: string) => {
      const index = document.paths[path]![method]!.parameters!.findIndex((parameter) => parameter.name === name);
      return compiled(`/paths/${pointer(path)}/${method}/parameters/${index}/schema`);
    },
  };
}
