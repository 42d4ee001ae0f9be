import { applyD1Migrations, env } from "cloudflare:test";

// Every test file starts from the schema that `wrangler d1 migrations apply` builds.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
