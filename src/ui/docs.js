// @ts-check
// Renders /openapi.json with the pinned swagger-ui served from our own origin.
// A script file rather than an inline one: the page's policy runs no inline script.

/** The bearer token the dashboard keeps for this tab (see api.js); "Try it out" sends it. */
const token = sessionStorage.getItem("fencelease.token");

// @ts-expect-error SwaggerUIBundle is the global that swagger-ui-bundle.js defines.
const ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // No call to swagger's online validator: the page talks to this origin only.
  validatorUrl: null,
  onComplete() {
    if (token) ui.preauthorizeApiKey("bearer", token);
  },
});
