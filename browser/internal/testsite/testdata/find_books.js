// A test tool file: the shape domains/<domain>/tools/*.js files have.
({
  name: "find_books",
  title: "Find books",
  description: "Lists every book by an author with its price, cheapest first.",
  inputSchema: { type: "object", properties: { author: { type: "string" } }, required: ["author"] },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://books.test/*"],
  async execute(input) {
    const r = await fetch("/api/books?author=" + encodeURIComponent(input.author));
    return await r.json();
  },
});
