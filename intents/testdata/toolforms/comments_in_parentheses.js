( /* the tool, with comments between its parentheses and braces */
  // and a line comment
  ({
    name: "form_comments_in_parentheses",
    description: "A tool wrapped twice, with comments.",
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
    urlPatterns: ["http://forms.test/comments_in_parentheses/*", "http://forms.test/all"],
    execute() {
      return { form: "comments_in_parentheses" };
    }
  })
)
