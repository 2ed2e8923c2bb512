// The first script pairbench injects into every document in treatment. It
// installs the WebMCP polyfill and a registry, hidden on window under a name
// chosen per browser, that registers each tool file whose URL patterns match
// this document's URL. Go calls it as (mark, matchesURL, installPolyfill).
(function pairbenchRegistry(mark, matchesURL, installPolyfill) {
  "use strict";
  // Tools live on top-level documents only.
  if (window.top !== window) return;
  // A window can outlive its document: the initial about:blank of a popup is
  // replaced by a same-origin page in the same window. What an earlier run
  // installed then points at the old document; remove it first.
  if (window[mark] && window[mark].doc !== document) {
    for (const target of [Document.prototype, navigator]) {
      const d = Object.getOwnPropertyDescriptor(target, "modelContext");
      if (d && d.configurable && document.modelContext === undefined) delete target.modelContext;
    }
  }
  try {
    installPolyfill();
  } catch (e) {
    console.error("pairbench: WebMCP polyfill failed", e);
  }
  // Tool scripts that ran before this one queued themselves.
  const queued = (window[mark] && window[mark].doc === undefined && window[mark].queue) || [];
  const registry = { doc: document, registered: [], failures: {} };
  registry.add = (patterns, make) => {
    if (!matchesURL(patterns, location.href)) return;
    let def;
    try {
      def = make();
    } catch (e) {
      registry.failures["(tool file)"] = String((e && e.message) || e);
      return;
    }
    const name = def && typeof def.name === "string" ? def.name : "(unnamed)";
    const mc = document.modelContext;
    if (!mc || typeof mc.registerTool !== "function") {
      registry.failures[name] = "document.modelContext is missing (not a secure context?)";
      return;
    }
    try {
      Promise.resolve(mc.registerTool({ ...def })).then(
        () => registry.registered.push(name),
        (e) => { registry.failures[name] = String((e && e.message) || e); },
      );
    } catch (e) {
      registry.failures[name] = String((e && e.message) || e);
    }
  };
  Object.defineProperty(window, mark, { value: registry, enumerable: false, configurable: true, writable: false });
  for (const [patterns, make] of queued) registry.add(patterns, make);
})
