package main

import (
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryCommandHasItsHelpFile holds help/ to the command tree: every
// command but version has a long help, its own help/<path>.txt, and every
// file there is some command's.
func TestEveryCommandHasItsHelpFile(t *testing.T) {
	files, err := fs.Glob(helpTexts, "help/*.txt")
	require.NoError(t, err)
	unused := map[string]bool{}
	for _, f := range files {
		unused[strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")] = true
	}
	for _, cmd := range allCommands(newRootCmd(io.Discard, io.Discard)) {
		if cmd.Name() == "version" {
			continue
		}
		name := helpName(cmd)
		if assert.True(t, unused[name], "%q has no help/%s.txt", cmd.CommandPath(), name) {
			assert.Equal(t, longHelp(name), cmd.Long, "%q shows help/%s.txt", cmd.CommandPath(), name)
		}
		delete(unused, name)
	}
	assert.Empty(t, unused, "help files no command shows")
}

// TestHelpExamplesParse runs every example of every command's help that
// calls pairbench through the command line's own parsing: the subcommand
// exists, its flags exist and take the values given, and its arguments
// pass its argument check. An example left behind by a renamed flag fails.
func TestHelpExamplesParse(t *testing.T) {
	examples := 0
	for _, cmd := range allCommands(newRootCmd(io.Discard, io.Discard)) {
		for _, line := range exampleLines(cmd.Long) {
			words := shellWords(t, line)
			for len(words) > 0 && strings.Contains(words[0], "=") { // VAR=... before the command
				words = words[1:]
			}
			if len(words) == 0 || words[0] != "pairbench" {
				continue
			}
			examples++
			root := newRootCmd(io.Discard, io.Discard)
			sub, args, err := root.Find(words[1:])
			if !assert.NoError(t, err, "%s: %s", cmd.CommandPath(), line) {
				continue
			}
			if !assert.NoError(t, sub.ParseFlags(args), "%s: %s", cmd.CommandPath(), line) {
				continue
			}
			assert.NoError(t, sub.ValidateArgs(sub.Flags().Args()), "%s: %s", cmd.CommandPath(), line)
		}
	}
	assert.Greater(t, examples, 20, "the examples were found")
}

// allCommands is cmd and every command below it.
func allCommands(cmd *cobra.Command) []*cobra.Command {
	all := []*cobra.Command{cmd}
	for _, sub := range cmd.Commands() {
		all = append(all, allCommands(sub)...)
	}
	return all
}

// helpName is the name of cmd's help file: its path below pairbench joined
// by dashes, or pairbench for the root.
func helpName(cmd *cobra.Command) string {
	path := strings.Fields(cmd.CommandPath())
	if len(path) == 1 {
		return path[0]
	}
	return strings.Join(path[1:], "-")
}

// exampleLines are the command lines under a help's "Examples:", each with
// its continuation lines joined and its trailing comment dropped.
func exampleLines(long string) []string {
	_, examples, ok := strings.Cut(long, "\nExamples:\n")
	if !ok {
		return nil
	}
	var lines []string
	joined := ""
	for _, l := range strings.Split(examples, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, `\`) {
			joined += strings.TrimSuffix(l, `\`)
			continue
		}
		l = joined + l
		joined = ""
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// shellWords splits line as a POSIX shell would split a simple command:
// blanks separate words, single quotes keep everything, double quotes keep
// all but a backslash before $, `, ", \ or a newline.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			require.GreaterOrEqual(t, end, 0, "unclosed ' in %s", line)
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\", line[i+1]) >= 0 {
					i++
				}
				word.WriteByte(line[i])
			}
			require.Less(t, i, len(line), `unclosed " in %s`, line)
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
