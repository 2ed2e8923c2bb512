({
  name: "weather_now",
  description: "Only on the weather site.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://weather.test/*"],
  execute() {
    return { temp: 21 };
  },
})
