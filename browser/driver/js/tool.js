// One tool file's script. Go calls it as (mark, meta, make), where meta is
// the file's {name, file, patterns, sourceURL, expect} and make its page form (a
// function that runs the file and returns its tool). It hands the tool to
// the registry, or queues it when the registry's script has not run yet.
(function pairbenchTool(mark, meta, make) {
  "use strict";
  if (window.top !== window) return;
  const registry = window[mark];
  if (registry && registry.doc === document) {
    registry.add(meta, make);
    return;
  }
  // The registry's script has not run on this document yet.
  if (!registry || registry.doc !== undefined) {
    Object.defineProperty(window, mark, { value: { queue: [] }, enumerable: false, configurable: true, writable: false });
  }
  window[mark].queue.push([meta, make]);
})
