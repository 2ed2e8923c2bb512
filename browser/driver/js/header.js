// The first script pairbench injects into every document in treatment. It
// installs the WebMCP polyfill and a registry, hidden on window under a name
// chosen per browser, that keeps registered exactly the tool files whose URL
// patterns match the document's URL, as the URL changes, and records why a
// tool did not register. Go calls it as (mark, matchesURL, installPolyfill,
// expected), where expected lists every tool file's {name, file, patterns,
// sourceURL, expect}: a file whose script never reaches the registry (the
// browser could not compile it) is reported as missing, and one that builds
// other metadata (expect) in the page than where pairbench read it fails.
(function pairbenchRegistry(mark, matchesURL, installPolyfill, expected) {
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
  // registered names the tools live now; failures says, per tool, why it
  // is not.
  const registry = { doc: document, registered: [], failures: {}, expected, added: [] };
  // fail records why entry's tool did not register: the browser's own
  // message, and the line of the tool file it points at when the error was
  // thrown there (its stack names the file by its sourceURL).
  const fail = (entry, e) => {
    let error = String(e);
    let line = 0;
    if (e && typeof e === "object") {
      error = e.name && e.message ? `${e.name}: ${e.message}` : String(e.message || e);
      const stack = typeof e.stack === "string" ? e.stack : "";
      const at = stack.indexOf(entry.sourceURL + ":");
      if (at >= 0) line = parseInt(stack.slice(at + entry.sourceURL.length + 1), 10) || 0;
    }
    registry.failures[entry.name] = { tool: entry.name, file: entry.file, line, error };
  };
  // canon is v as JSON text with object keys sorted, undefined as null.
  const canon = (v) => {
    if (v === null || v === undefined) return "null";
    if (typeof v !== "object") return JSON.stringify(v);
    if (Array.isArray(v)) return "[" + v.map(canon).join(",") + "]";
    return "{" + Object.keys(v).sort().filter((k) => v[k] !== undefined)
      .map((k) => JSON.stringify(k) + ":" + canon(v[k])).join(",") + "}";
  };
  // differences names the metadata in which the tool the page built differs
  // from the one pairbench read (expect): the agent must see what validate
  // and the plan saw.
  const differences = (expect, def) => {
    if (!def || typeof def !== "object") return ["value (not an object)"];
    const got = {
      name: def.name,
      title: def.title || "",
      description: def.description || "",
      inputSchema: def.inputSchema,
      readOnlyHint: !!(def.annotations && def.annotations.readOnlyHint),
    };
    return Object.keys(expect).filter((k) => canon(expect[k]) !== canon(got[k]));
  };
  // One entry per tool file; controller is set while its registration lives.
  const entries = [];
  const register = (entry) => {
    let def;
    try {
      def = entry.make();
    } catch (e) {
      fail(entry, e);
      return;
    }
    const differs = differences(entry.expect, def);
    if (differs.length > 0) {
      fail(entry, `in the browser the file gives the tool another ${differs.join(", ")} than where pairbench read it`);
      return;
    }
    const mc = document.modelContext;
    if (!mc || typeof mc.registerTool !== "function") {
      fail(entry, "document.modelContext is missing (not a secure context?)");
      return;
    }
    const controller = new AbortController();
    entry.controller = controller;
    delete registry.failures[entry.name];
    const name = entry.name;
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
        if (!controller.signal.aborted) fail(entry, e);
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
  // add takes one tool file's script: meta is its {name, file, patterns,
  // sourceURL, expect}, make its page form.
  registry.add = (meta, make) => {
    const entry = { ...meta, make, controller: null };
    entries.push(entry);
    registry.added.push(meta.name);
    if (matchesURL(entry.patterns, location.href)) register(entry);
  };
  if (window.navigation && typeof window.navigation.addEventListener === "function") {
    window.navigation.addEventListener("currententrychange", sync);
  }
  window.addEventListener("popstate", sync);
  window.addEventListener("hashchange", sync);
  Object.defineProperty(window, mark, { value: registry, enumerable: false, configurable: true, writable: false });
  for (const [meta, make] of queued) registry.add(meta, make);
})
