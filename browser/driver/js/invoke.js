// Runs the live tool name with argsJSON (a JSON object text) and returns JSON
// text: {text, registered} on success, {exception, registered} when the tool
// threw, is not live, or the page cannot run it. The polyfill's executeTool
// takes the input as JSON text, native WebMCP as an object. Go calls it as
// (mark, name, argsJSON).
(async function pairbenchInvoke(mark, name, argsJSON) {
  "use strict";
  const registry = window[mark];
  const registered = !!(registry && Array.isArray(registry.registered) && registry.registered.includes(name));
  const fail = (message) => JSON.stringify({ exception: message, registered });
  const mc = document.modelContext;
  if (!mc || typeof mc.getTools !== "function") return fail("this page has no WebMCP (document.modelContext is missing)");
  if (typeof mc.executeTool !== "function") return fail("this page's WebMCP cannot run tools (no executeTool)");
  try {
    const tool = (await mc.getTools()).find((t) => t.name === name);
    if (!tool) return fail(`no tool named "${name}" is live on this page`);
    const input = mc.__isWebMCPPolyfill === true ? argsJSON : JSON.parse(argsJSON);
    const out = await mc.executeTool(tool, input);
    return JSON.stringify({ text: typeof out === "string" ? out : JSON.stringify(out), registered });
  } catch (e) {
    return fail(String((e && e.message) || e));
  }
})
