({
  name: "out_of_stock",
  description: "Reports a failure the way tools do: a result with status error.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://books.test/*"],
  async execute() {
    return { status: "error", error: "the shop is closed" };
  },
}) // a trailing comment must not break the wrapper
