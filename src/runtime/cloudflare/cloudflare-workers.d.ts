// The Node project's typecheck (tsconfig.json) reads src/ with Node's types, in
// which the Workers runtime's module "cloudflare:workers" is not declared: this
// declares the part src/runtime/cloudflare takes from it, from the importable
// Workers types. test/worker/tsconfig.json reads the runtime's own declaration.
declare module "cloudflare:workers" {
  import { CloudflareWorkersModule } from "@cloudflare/workers-types";
  export const DurableObject: typeof CloudflareWorkersModule.DurableObject;
  export type DurableObject<Env = unknown, Props = {}> = CloudflareWorkersModule.DurableObject<Env, Props>;
}
