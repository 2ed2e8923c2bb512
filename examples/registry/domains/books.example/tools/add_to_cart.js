// Not read-only: it would change the visitor's cart, so pairbench never
// registers it.
({
  name: "add_to_cart",
  title: "Add to cart",
  description: "Adds one copy of a book to the cart.",
  inputSchema: {
    type: "object",
    properties: { id: { type: "integer", minimum: 1 } },
    required: ["id"]
  },
  annotations: { readOnlyHint: false },
  urlPatterns: ["http://books.example/book/*"],
  async execute(input) {
    const r = await fetch("/api/cart", { method: "POST", body: JSON.stringify({ id: input.id }) });
    return await r.json();
  }
})
