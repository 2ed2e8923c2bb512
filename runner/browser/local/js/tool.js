// One tool file's script. Go calls it as (mark, patterns, make), where make
// returns the tool file's object literal. It hands the tool to the registry,
// or queues it when the registry's script has not run yet.
(function pairbenchTool(mark, patterns, make) {
  "use strict";
  if (window.top !== window) return;
  const registry = window[mark];
  if (registry && registry.doc === document) {
    registry.add(patterns, make);
    return;
  }
  // The registry's script has not run on this document yet.
  if (!registry || registry.doc !== undefined) {
    Object.defineProperty(window, mark, { value: { queue: [] }, enumerable: false, configurable: true, writable: false });
  }
  window[mark].queue.push([patterns, make]);
})
