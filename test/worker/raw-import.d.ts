// Vite's `?raw` imports: a file's text, as the cost test reads docs/cost.md.
declare module "*?raw" {
  const text: string;
  export default text;
}
