// A .sql file imported as its text: wrangler.toml's [[rules]] type "Text" bundles
// it so, and vitest.config.ts's sql-as-text plugin does the same in the tests.
declare module "*.sql" {
  const text: string;
  export default text;
}
