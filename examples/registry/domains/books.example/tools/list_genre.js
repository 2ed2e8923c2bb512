// Genres are a fixed list on this site; the schema names them so an agent
// need not guess.
const GENRES = ["fiction", "poetry", "essays"];

({
  name: "list_genre",
  title: "List a genre",
  description: "Lists every book in one genre, cheapest first, with id, title, author and price (US dollars).",
  inputSchema: {
    type: "object",
    properties: {
      genre: { type: "string", enum: GENRES }
    },
    required: ["genre"],
    additionalProperties: false
  },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://books.example/*"],
  async execute(input) {
    const r = await fetch("/api/genre?genre=" + encodeURIComponent(input.genre));
    const body = await r.json();
    if (!r.ok) return { status: "error", error: body.error || "HTTP " + r.status };
    return body;
  }
})
