// matchesURL reports whether href matches at least one of patterns, which are
// URLPattern constructor strings ("http://books.example/*"). It uses the
// browser's own URLPattern, the reference that package intents' Go matcher
// follows. A pattern the browser cannot compile matches nothing.
(function matchesURL(patterns, href) {
  if (typeof URLPattern !== "function") return false;
  return patterns.some((pattern) => {
    try {
      return new URLPattern(pattern).test(href);
    } catch {
      return false;
    }
  });
})
