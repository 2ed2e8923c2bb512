// Helper statements before the tool: execute builds its request and reads
// the answer with them.
function booksURL(author) {
  return "/api/books?author=" + encodeURIComponent(author);
}

function result(r, body) {
  return r.ok ? body : { status: "error", error: body.error || "HTTP " + r.status };
}

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
    const r = await fetch(booksURL(input.author));
    return result(r, await r.json());
  }
})
