// @ts-check
// Renders openapi.json (beside /docs, whatever prefix a proxy adds) with the pinned swagger-ui served from our own origin.
// A script file rather than an inline one: the page's policy runs no inline script.

/** The bearer token the dashboard keeps for this tab (see api.js); "Try it out" sends it. */
const token = sessionStorage.getItem("fencelease.token");

/** Where this page is served: "/" or, behind a proxy, its prefix ("/fencelease/"). */
const base = location.pathname.replace(/docs$/, "");

// @ts-expect-error SwaggerUIBundle is the global that swagger-ui-bundle.js defines.
const ui = SwaggerUIBundle({
  url: "openapi.json",
  // "Try it out" sends to the document's paths (/v1/...) under the same prefix as this page.
  /** @param {{ url: string }} request */
  requestInterceptor(request) {
    const url = new URL(request.url, location.href);
    if (url.origin === location.origin && !url.pathname.startsWith(base)) {
      url.pathname = base + url.pathname.slice(1);
      request.url = url.href;
    }
    return request;
  },
  dom_id: "#swagger-ui",
  deepLinking: true,
  // No call to swagger's online validator: the page talks to this origin only.
  validatorUrl: null,
  onComplete() {
    if (token) ui.preauthorizeApiKey("bearer", token);
  },
});
