// Attaches Playwright (the library under @playwright/mcp) to the browser over
// CDP, as the agent's browser-control server does, and prints what
// books.test/probe's first script saw on the start tab and on a new page.
// Usage: node playwright_probe.js CDP_URL NODE_MODULES
const { chromium } = require(process.argv[3] + "/playwright-core");

(async () => {
  const browser = await chromium.connectOverCDP(process.argv[2]);
  const context = browser.contexts()[0];
  const start = context.pages()[0];
  await start.goto("http://books.test/probe");
  const fresh = await context.newPage();
  await fresh.goto("http://books.test/probe");
  console.log(JSON.stringify({
    start: await start.evaluate(() => window.probe),
    newPage: await fresh.evaluate(() => window.probe),
  }));
  await browser.close(); // over CDP this only disconnects
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
