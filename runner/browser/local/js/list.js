// Lists the WebMCP tools live on this document as JSON text:
// {tools: [{name, title, description, inputSchema, readOnlyHint, registered}],
//  failures: {name: why}}. Go calls it as (mark).
(async function pairbenchList(mark) {
  "use strict";
  const registry = window[mark];
  const mine = registry && Array.isArray(registry.registered) ? registry.registered : [];
  const failures = (registry && registry.failures) || {};
  const mc = document.modelContext;
  if (!mc || typeof mc.getTools !== "function") return JSON.stringify({ tools: [], failures });
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
  return JSON.stringify({ tools, failures });
})
