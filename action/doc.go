// Package action holds the tests of pairbench's GitHub Action: action.yml
// at the repository root, whose steps run the bash scripts in this
// directory, and the workflows that use it (.github/workflows and
// examples/workflows). It has no code of its own; docs/action.md describes
// the Action.
package action
