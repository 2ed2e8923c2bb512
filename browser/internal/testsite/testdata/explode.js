({
  name: "explode",
  description: "Throws.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://books.test/*"],
  execute() {
    throw new Error("kaboom");
  },
});;
