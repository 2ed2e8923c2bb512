package main

import (
	"embed"
	"strings"
)

// helpTexts holds every command's long help (cobra's Long), one text file
// a command: help/<command>.txt, a subcommand's path joined by dashes
// (help/sandbox-run.txt), so the prose is read, reviewed and diffed as
// prose beside the code that wires the command.
//
//go:embed help/*.txt
var helpTexts embed.FS

// longHelp is the text of help/<name>.txt without its final newline. Every
// command asks for its own when it is built, so a missing file fails every
// test that builds the command line.
func longHelp(name string) string {
	b, err := helpTexts.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}
