// A constant shared by the metadata and execute.
const GENRES = ["fiction", "poetry", "essays"];

({
  name: "form_shared_constant",
  description: "Genres: " + GENRES.join(", ") + ".",
  inputSchema: {
    type: "object",
    properties: { genre: { type: "string", enum: GENRES } },
  },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://forms.test/shared_constant/*", "http://forms.test/all"],
  execute(input) {
    return { form: "shared_constant", known: GENRES.includes(input.genre) };
  }
})
