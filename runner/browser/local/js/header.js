// The first script pairbench injects into every document in treatment. It
// installs the WebMCP polyfill and a registry, hidden on window under a name
// chosen per browser, that keeps registered exactly the tool files whose URL
// patterns match the document's URL, as the URL changes. Go calls it as
// (mark, matchesURL, installPolyfill).
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
  // registered names the tools live now; failures says why others are not.
  const registry = { doc: document, registered: [], failures: {} };
  const fail = (name, e) => {
    registry.failures[name] = String((e && e.message) || e);
  };
  // One entry per tool file; controller is set while its registration lives.
  const entries = [];
  const register = (entry) => {
    let def;
    try {
      def = entry.make();
    } catch (e) {
      fail("(tool file)", e);
      return;
    }
    const name = def && typeof def.name === "string" ? def.name : "(unnamed)";
    const mc = document.modelContext;
    if (!mc || typeof mc.registerTool !== "function") {
      fail(name, "document.modelContext is missing (not a secure context?)");
      return;
    }
    const controller = new AbortController();
    entry.controller = controller;
    entry.name = name;
    let pending;
    try {
      // Called now, not later: the tool must be live before page scripts run.
      pending = mc.registerTool({ ...def }, { signal: controller.signal });
    } catch (e) {
      pending = Promise.reject(e);
    }
    Promise.resolve(pending).then(
      () => {
        if (!controller.signal.aborted && !registry.registered.includes(name)) registry.registered.push(name);
      },
      (e) => {
        if (entry.controller === controller) entry.controller = null;
        if (!controller.signal.aborted) fail(name, e);
      },
    );
  };
  const unregister = (entry) => {
    entry.controller.abort();
    entry.controller = null;
    registry.registered = registry.registered.filter((n) => n !== entry.name);
  };
  // A same-document URL change (history.pushState, a fragment) keeps the
  // document: register what now matches and withdraw what no longer does.
  const sync = () => {
    for (const entry of entries) {
      const wanted = matchesURL(entry.patterns, location.href);
      if (wanted && !entry.controller) register(entry);
      else if (!wanted && entry.controller) unregister(entry);
    }
  };
  registry.add = (patterns, make) => {
    const entry = { patterns, make, controller: null, name: "" };
    entries.push(entry);
    if (matchesURL(patterns, location.href)) register(entry);
  };
  if (window.navigation && typeof window.navigation.addEventListener === "function") {
    window.navigation.addEventListener("currententrychange", sync);
  }
  window.addEventListener("popstate", sync);
  window.addEventListener("hashchange", sync);
  Object.defineProperty(window, mark, { value: registry, enumerable: false, configurable: true, writable: false });
  for (const [patterns, make] of queued) registry.add(patterns, make);
})
