// An async helper that execute awaits: it fetches from the page's own site.
async function getJSON(path) {
  const r = await fetch(path);
  if (!r.ok) throw new Error("HTTP " + r.status);
  return r.json();
}

({
  name: "form_async_helper",
  description: "Reads the site's API through an async helper.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://forms.test/async_helper/*", "http://forms.test/all"],
  async execute() {
    const body = await getJSON("/api/ping");
    return { form: "async_helper", body };
  }
})
