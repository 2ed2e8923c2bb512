({
  name: "find_books",
  title: "Find books by author",
  description: "Lists every book in the catalogue by one author, cheapest first, with id, title, genre and price (US dollars). Use the author's full name.",
  inputSchema: {
    type: "object",
    properties: {
      author: { type: "string", description: "The author's full name, for example Celia Marsh." }
    },
    required: ["author"],
    additionalProperties: false
  },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://books.example/*"],
  async execute(input) {
    const r = await fetch("/api/books?author=" + encodeURIComponent(input.author));
    const body = await r.json();
    if (!r.ok) return { status: "error", error: body.error || "HTTP " + r.status };
    return body;
  }
})
