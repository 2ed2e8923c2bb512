// The plainest tool file: one object literal.
({
  name: "form_literal",
  description: "A tool file that is one object literal.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://forms.test/literal/*", "http://forms.test/all"],
  execute() {
    return { form: "literal" };
  }
})
