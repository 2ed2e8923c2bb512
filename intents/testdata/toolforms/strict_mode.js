"use strict";
// Strict-mode code: the directive applies to the whole file.
class Counter {
  #n = 0;
  next() {
    return ++this.#n;
  }
}
const counter = new Counter();

({
  name: "form_strict_mode",
  description: "A strict-mode tool file with a class.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://forms.test/strict_mode/*", "http://forms.test/all"],
  execute() {
    // In strict code a plain call has no this.
    const self = (function () { return this; })();
    return { form: "strict_mode", strict: self === undefined, next: counter.next() };
  }
}); // a trailing comment
;;
/* and a block comment after the tool */
