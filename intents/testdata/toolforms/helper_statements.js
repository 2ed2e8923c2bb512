// Helper functions and statements before the tool.
function label(form) {
  return "form " + form;
}
let calls = 0;
const count = () => ++calls;

({
  name: "form_helper_statements",
  description: label("helper_statements"),
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://forms.test/helper_statements/*", "http://forms.test/all"],
  execute() {
    return { form: "helper_statements", label: label("x"), calls: count() };
  }
});
