({
  name: "list_cities",
  title: "List cities",
  description: "Lists the names of the cities this site has weather for. It gives no temperatures.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://weather.example/*"],
  async execute() {
    const r = await fetch("/api/cities");
    return await r.json();
  }
})
