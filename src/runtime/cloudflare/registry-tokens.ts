import type { DurableObjectNamespace } from "@cloudflare/workers-types";
import type { Driver } from "../../drivers/driver.ts";
import { Tokens, type TokenStore } from "../../store/tokens.ts";
import { registry } from "./directory.ts";

/**
 * The API tokens of objects mode: the store's own Tokens (secrets made and
 * hashed here, in the Worker; each argument checked before anything is sent),
 * whose statements run in the registry, the one Directory object every queue
 * shares (`Directory.tokens`), as one transaction a call.
 */
export function registryTokens(directory: DurableObjectNamespace): TokenStore {
  // A stub a call: one made in another request's handler cannot be used in this one.
  const driver: Driver = {
    run: async (statement) => (await registry(directory).tokens([statement]))[0]!,
    batch: (statements) => registry(directory).tokens(statements),
    close() {},
    remote: true,
  };
  return new Tokens(driver);
}
