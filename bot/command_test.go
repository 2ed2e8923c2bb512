package bot_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/bot"
)

func TestParseComment(t *testing.T) {
	t.Parallel()
	run := func(pairs int, model string, intents ...string) *bot.Command {
		return &bot.Command{Verb: bot.VerbRun, Pairs: pairs, Model: model, Intents: intents}
	}
	tests := []struct {
		name      string
		body      string
		want      *bot.Command
		reply     string // a substring the reply must hold; "" means no reply
		wantReply bool
	}{
		{name: "plain comment", body: "LGTM, thanks!"},
		{name: "empty", body: ""},
		{name: "other bot", body: "/benchmark run"},
		{name: "mention in prose", body: "please do /bench run later"},
		{name: "quoted", body: "> /bench run\nno"},
		{name: "lazy continuation of a quote", body: "> I was going to say\n/bench run\n"},
		{name: "nested quote continued", body: ">> deep\n/bench cancel"},
		{name: "pre block", body: "<pre>\n/bench run\n</pre>"},
		{name: "pre block with attributes", body: "<PRE class=\"x\">\n/bench cancel\n</PRE>\n"},
		{name: "textarea", body: "<textarea>\n/bench run\n</textarea>"},
		{name: "after a quote and a blank line", body: "> quoted\n\n/bench run", want: run(0, "")},
		{name: "after an empty quote line", body: "> quoted\n>\n/bench run", want: run(0, "")},
		{name: "after a closed pre", body: "<pre>x</pre>\n/bench run", want: run(0, "")},
		{name: "after a pre block", body: "<pre>\nx\n</pre>\n/bench run", want: run(0, "")},
		{name: "a word starting with pre", body: "<prefix>\n/bench run", want: run(0, "")},
		{name: "run", body: "/bench run", want: run(0, "")},
		{name: "run with surrounding text", body: "Looks good.\n\n/bench run\n\nthanks", want: run(0, "")},
		{name: "run intents", body: "/bench run books-cheapest books-count", want: run(0, "", "books-cheapest", "books-count")},
		{name: "run flags", body: "/bench run --pairs 30 --model openai/gpt-x", want: run(30, "openai/gpt-x")},
		{name: "flags and intents interleaved", body: "/bench run a --pairs=5 b -model m", want: run(5, "m", "a", "b")},
		{name: "agent", body: "/bench run a --agent claude-code", want: &bot.Command{Verb: bot.VerbRun, Agent: "claude-code", Intents: []string{"a"}}},
		{name: "agent not known here", body: "/bench run --agent aider", want: &bot.Command{Verb: bot.VerbRun, Agent: "aider"}},
		{name: "bad agent", body: "/bench run --agent codex;rm", reply: "is not an agent name (pi, claude-code or codex)", wantReply: true},
		{name: "agent with a path", body: "/bench run --agent ../pi", reply: "is not an agent name", wantReply: true},
		{name: "against none", body: "/bench run --against none books-count", want: &bot.Command{Verb: bot.VerbRun, Against: bot.AgainstNone, Intents: []string{"books-count"}}},
		{name: "against the changes", body: "/bench run --against changes", want: run(0, "")},
		{name: "against a revision", body: "/bench run --against main", reply: "want none (no tools) or changes", wantReply: true},
		{name: "more", body: "/bench more", want: &bot.Command{Verb: bot.VerbMore}},
		{name: "more pairs", body: "/bench more 12", want: &bot.Command{Verb: bot.VerbMore, Pairs: 12}},
		{name: "more of nothing", body: "/bench more 0", reply: "a whole number from 1 to 1000", wantReply: true},
		{name: "more of what", body: "/bench more lots", reply: "give the pairs per intent to add", wantReply: true},
		{name: "more twice", body: "/bench more 1 2", reply: "takes at most one argument", wantReply: true},
		{name: "crlf", body: "/bench run x\r\n", want: run(0, "", "x")},
		{name: "cancel", body: "/bench cancel", want: &bot.Command{Verb: bot.VerbCancel}},
		{name: "status", body: "/bench status", want: &bot.Command{Verb: bot.VerbStatus}},
		{name: "help", body: "/bench help", reply: "Usage:", wantReply: true},
		{name: "bare", body: "/bench", reply: "Usage:", wantReply: true},
		{name: "unknown verb", body: "/bench launch", reply: "I do not know `/bench launch`", wantReply: true},
		{name: "unknown flag", body: "/bench run --fast", reply: "unknown flag: -fast", wantReply: true},
		{name: "bad pairs", body: "/bench run --pairs lots", reply: "invalid value", wantReply: true},
		{name: "zero pairs", body: "/bench run --pairs 0", reply: "--pairs must be between 1 and 1000", wantReply: true},
		{name: "too many pairs", body: "/bench run --pairs 1001", reply: "--pairs must be between", wantReply: true},
		{name: "missing flag value", body: "/bench run --model", reply: "flag needs an argument", wantReply: true},
		{name: "bad intent", body: "/bench run ../../etc", reply: "is not an intent id", wantReply: true},
		{name: "bad model", body: "/bench run --model `rm`", reply: "is not a model name", wantReply: true},
		{name: "cancel with args", body: "/bench cancel now", reply: "takes no arguments", wantReply: true},
		{name: "help flag", body: "/bench run -h", reply: "no -h flag", wantReply: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bot.ParseComment(tt.body)
			assert.Equal(t, tt.want, got.Command, "ParseComment(%q).Command", tt.body)
			if tt.wantReply {
				assert.Contains(t, got.Reply, tt.reply, "ParseComment(%q).Reply", tt.body)
			} else {
				assert.Empty(t, got.Reply, "ParseComment(%q).Reply", tt.body)
			}
			assert.Equal(t, tt.want == nil && !tt.wantReply, got.Ignored())
		})
	}
}

func TestParseCommentReplyIsHelpful(t *testing.T) {
	t.Parallel()
	// Every refusal carries the usage, so the user can fix the command.
	for _, body := range []string{"/bench launch", "/bench run --fast", "/bench status please"} {
		assert.Contains(t, bot.ParseComment(body).Reply, bot.Usage, body)
	}
}

func FuzzParseComment(f *testing.F) {
	for _, s := range []string{"/bench run", "/bench run a --pairs 3", "/bench cancel", "/bench", "/bench run --model", "hello", "/bench run \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p := bot.ParseComment(body)
		if p.Command != nil && p.Reply != "" {
			t.Fatalf("ParseComment(%q) gave both a command and a reply", body)
		}
		if p.Command == nil && p.Reply == "" && strings.Contains(body, "/bench") {
			for line := range strings.Lines(body) {
				if f := strings.Fields(line); len(f) > 0 && f[0] == "/bench" {
					t.Fatalf("ParseComment(%q) ignored a /bench line", body)
				}
			}
		}
		if c := p.Command; c != nil {
			if c.Pairs < 0 || c.Pairs > bot.MaxPairs {
				t.Fatalf("ParseComment(%q).Pairs = %d", body, c.Pairs)
			}
			for _, in := range c.Intents {
				if strings.ContainsAny(in, "` \n") || strings.HasPrefix(in, "-") {
					t.Fatalf("ParseComment(%q) let intent %q through", body, in)
				}
			}
		}
		if !utf8.ValidString(p.Reply) && utf8.ValidString(body) {
			t.Fatalf("ParseComment(%q) replied with invalid UTF-8", body)
		}
	})
}

func BenchmarkParseComment(b *testing.B) {
	body := strings.Repeat("Some review text that is not a command.\n", 50) + "/bench run books-cheapest books-count --pairs 30 --model m\n"
	for b.Loop() {
		if bot.ParseComment(body).Command == nil {
			b.Fatal("no command")
		}
	}
}
