// Lists the WebMCP tools live on this document as JSON text:
// {url, tools: [{name, title, description, inputSchema, readOnlyHint,
// registered}], registered: [name], failures: [{tool, file, line, error}],
// missing: [name]}. registered names the tools pairbench's registry holds
// registered on this document.
// missing names the tool files whose patterns match this document but whose
// script never reached the registry. Go calls it as (mark, matchesURL).
(async function pairbenchList(mark, matchesURL) {
  "use strict";
  const registry = window[mark];
  const mine = registry && Array.isArray(registry.registered) ? registry.registered : [];
  const failures = registry && registry.failures ? Object.values(registry.failures) : [];
  const missing =
    registry && Array.isArray(registry.expected)
      ? registry.expected
          .filter((t) => !registry.added.includes(t.name) && matchesURL(t.patterns, location.href))
          .map((t) => t.name)
      : [];
  const url = location.href;
  const mc = document.modelContext;
  if (!mc || typeof mc.getTools !== "function") return JSON.stringify({ url, tools: [], registered: mine, failures, missing });
  const tools = (await mc.getTools()).map((t) => {
    let schema = t.inputSchema;
    if (typeof schema === "string") {
      try {
        schema = JSON.parse(schema);
      } catch {
        schema = undefined;
      }
    }
    return {
      name: String(t.name),
      title: t.title ? String(t.title) : "",
      description: t.description ? String(t.description) : "",
      inputSchema: schema,
      readOnlyHint: !!(t.annotations && t.annotations.readOnlyHint),
      registered: mine.includes(t.name),
    };
  });
  return JSON.stringify({ url, tools, registered: mine, failures, missing });
})
