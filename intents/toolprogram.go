package intents

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
)

// A tool file is a classic script (not a module) whose last statement is one
// object literal, the tool: ({ name: ..., execute(input) {...} }). Any
// statements may come before it: constants, helper functions (async ones
// too), classes, a "use strict" directive. Comments and semicolons may follow
// it.
//
// pairbench runs a tool file in one form only, its page form: a function
// expression whose body is the file, with the object literal assigned to the
// function's one parameter and returned:
//
//	(pairbench$tool) => {STATEMENTS (pairbench$tool={ ... })
//	;return pairbench$tool;
//	}
//
// validate calls it in goja to read the metadata, and the page calls it to
// get the object it registers, so both run the same text. It is built from
// the parsed program (the assignment goes right before the literal's opening
// brace, whose position the parser gives), never by trimming the text, and
// needs no eval or new Function in the page. Line N of the page form is line
// N of the file, so the page's errors point into the file. The file's
// declarations are local to the function: two tool files on one page never
// see each other's names, nor does the page see theirs.

// toolValue is the page form's parameter. A tool file may not use the name.
const toolValue = "pairbench$tool"

// toolFunction checks that src is a tool file and returns its page form.
// Errors are *ToolError, at the line of the fault.
func toolFunction(src string) (string, error) {
	if strings.HasPrefix(strings.TrimPrefix(src, "\ufeff"), "#!") {
		return "", &ToolError{Line: 1, Msg: "a tool file is not a program to run: remove the #! line"}
	}
	if i := strings.Index(src, toolValue); i >= 0 {
		return "", &ToolError{Line: 1 + strings.Count(src[:i], "\n"),
			Msg: toolValue + " is the name pairbench's page form of the file uses; rename it"}
	}
	prog, err := parseScript(src)
	if err != nil {
		te := syntaxError(err)
		te.Msg += syntaxHint(src, err)
		return "", te
	}
	line := func(n ast.Node) int { return prog.File.Position(int(n.Idx0()) - prog.File.Base()).Line }

	body := prog.Body
	for len(body) > 0 {
		if _, empty := body[len(body)-1].(*ast.EmptyStatement); !empty {
			break
		}
		body = body[:len(body)-1]
	}
	if len(body) == 0 {
		return "", &ToolError{Line: 1, Msg: "tool file has no tool: end it with the tool's object literal, ({ name: ..., execute(input) {...} })"}
	}
	last := body[len(body)-1]
	lit := objectLiteral(last)
	if lit == nil {
		return "", &ToolError{Line: line(last), Msg: notALiteral(prog, last)}
	}
	for _, s := range body[:len(body)-1] {
		if objectLiteral(s) != nil {
			return "", &ToolError{Line: line(s), Msg: fmt.Sprintf(
				"an object literal before the tool's own (line %d): a tool file defines one tool, in its last statement", line(last))}
		}
	}
	brace := int(lit.LeftBrace) - prog.File.Base()
	return "(" + toolValue + ") => {" + src[:brace] + toolValue + "=" + src[brace:] +
		"\n;return " + toolValue + ";\n}", nil
}

// parseScript parses src as a classic script. Source maps are off: a
// sourceMappingURL comment would otherwise make the parser read the file it
// names from the host (a tool file naming /dev/zero never finishes).
func parseScript(src string) (*ast.Program, error) {
	return parser.ParseFile(nil, "tool.js", src, 0, parser.WithDisableSourceMaps)
}

// objectLiteral returns the object literal s consists of, if it is an
// expression statement of exactly one.
func objectLiteral(s ast.Statement) *ast.ObjectLiteral {
	es, ok := s.(*ast.ExpressionStatement)
	if !ok {
		return nil
	}
	lit, _ := es.Expression.(*ast.ObjectLiteral)
	return lit
}

// notALiteral says why last, a tool file's last statement, is not its tool.
func notALiteral(prog *ast.Program, last ast.Statement) string {
	const want = "a tool file's last statement must be the tool's object literal, ({ name: ..., execute(input) {...} })"
	pos := func(idx file.Idx) int { return prog.File.Position(int(idx) - prog.File.Base()).Line }
	if call := trailingCall(last); call != nil && len(call.ArgumentList) == 1 {
		if _, ok := call.ArgumentList[0].(*ast.ObjectLiteral); ok {
			if end := pos(call.Callee.Idx1() - 1); pos(call.LeftParenthesis) > end {
				return fmt.Sprintf("the object literal on line %d continues the statement before it (a line that starts with \"(\" continues the one above): end line %d with a semicolon",
					pos(call.LeftParenthesis), end)
			}
		}
	}
	switch s := last.(type) {
	case *ast.ExpressionStatement:
		switch e := s.Expression.(type) {
		case *ast.AssignExpression:
			if dot, ok := e.Left.(*ast.DotExpression); ok && isExports(dot) {
				return "a tool file is a script, not a CommonJS module: end it with ({ ... }) instead of assigning to exports"
			}
			return "the file ends in an assignment; " + want
		case *ast.SequenceExpression:
			return "the file ends in a comma expression; a tool file defines one tool: " + want
		case *ast.Identifier:
			return fmt.Sprintf("the file ends in the name %s; write the object literal itself as the last statement, not a name for it", e.Name)
		case *ast.CallExpression:
			return "the file ends in a call; " + want
		case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
			return "the file ends in a function; " + want
		}
		return "the file ends in an expression that is not an object literal; " + want
	case *ast.BlockStatement:
		return "the file ends in a block: an object literal that starts a statement is read as a block, so wrap it in parentheses, ({ ... })"
	case *ast.FunctionDeclaration:
		return "the file ends in a function declaration; " + want
	case *ast.ClassDeclaration:
		return "the file ends in a class declaration; " + want
	case *ast.LexicalDeclaration:
		return fmt.Sprintf("the file ends in a %s declaration; %s", s.Token, want)
	case *ast.VariableStatement:
		return "the file ends in a var declaration; " + want
	}
	return "the file ends in a statement that is not an object literal; " + want
}

// trailingCall returns the call a statement ends in, if any: the expression
// of an expression statement or a throw, or the initializer of a
// declaration's last binding.
func trailingCall(s ast.Statement) *ast.CallExpression {
	var e ast.Expression
	switch s := s.(type) {
	case *ast.ExpressionStatement:
		e = s.Expression
	case *ast.LexicalDeclaration:
		if len(s.List) > 0 {
			e = s.List[len(s.List)-1].Initializer
		}
	case *ast.VariableStatement:
		if len(s.List) > 0 {
			e = s.List[len(s.List)-1].Initializer
		}
	case *ast.ThrowStatement:
		e = s.Argument
	}
	if a, ok := e.(*ast.AssignExpression); ok {
		e = a.Right
	}
	call, _ := e.(*ast.CallExpression)
	return call
}

// isExports reports whether dot is module.exports or exports.NAME.
func isExports(dot *ast.DotExpression) bool {
	if id, ok := dot.Left.(*ast.Identifier); ok {
		return (id.Name == "module" && dot.Identifier.Name == "exports") || id.Name == "exports"
	}
	return false
}

// syntaxHint adds, to a syntax error, what the user most likely meant.
func syntaxHint(src string, err error) string {
	var list parser.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return ""
	}
	first := list[0]
	lines := strings.Split(src, "\n")
	text := ""
	if n := first.Position.Line; n >= 1 && n <= len(lines) {
		text = strings.TrimSpace(lines[n-1])
	}
	switch {
	case strings.HasPrefix(text, "export ") || strings.HasPrefix(text, "export{"):
		return " (a tool file is a classic script, not an ES module: end it with ({ ... }) instead of export default { ... })"
	case strings.HasPrefix(text, "import ") || strings.HasPrefix(text, "import{"):
		return " (a tool file is a classic script, not an ES module, and cannot import: put what it needs in the file)"
	case strings.Contains(first.Message, "Illegal return"):
		return " (a tool file does not return its tool: end it with the object literal itself, ({ ... }))"
	}
	if n := bareLiteralLine(src, lines); n > 0 {
		return fmt.Sprintf(" (the object literal on line %d starts a statement, so it is read as a block: wrap it in parentheses, ({ ... }))", n)
	}
	return ""
}

// bareLiteralLine finds the line of an object literal written without
// parentheses as a tool file's last statement: the file parses as a tool
// file once that line's "{" is wrapped. It tries the last few lines that
// start with "{" and returns 0 when none fits.
func bareLiteralLine(src string, lines []string) int {
	offset := len(src)
	tries := 0
	for i := len(lines) - 1; i >= 0 && tries < 3; i-- {
		offset -= len(lines[i])
		if i < len(lines)-1 {
			offset-- // the newline after line i
		}
		trimmed := strings.TrimLeft(lines[i], " \t")
		if !strings.HasPrefix(trimmed, "{") {
			continue
		}
		tries++
		at := offset + len(lines[i]) - len(trimmed)
		prog, err := parseScript(src[:at] + "(" + src[at:] + "\n)")
		if err == nil && len(prog.Body) > 0 && objectLiteral(prog.Body[len(prog.Body)-1]) != nil {
			return i + 1
		}
	}
	return 0
}

// propertyLine returns the line of the tool file src on which its tool's
// object literal writes the top-level property key, or 0 when it does not
// (the property came from a spread, or a computed key).
func propertyLine(src, key string) int {
	prog, err := parseScript(src)
	if err != nil || len(prog.Body) == 0 {
		return 0
	}
	var lit *ast.ObjectLiteral
	for i := len(prog.Body) - 1; i >= 0 && lit == nil; i-- {
		if _, empty := prog.Body[i].(*ast.EmptyStatement); !empty {
			lit = objectLiteral(prog.Body[i])
			if lit == nil {
				return 0
			}
		}
	}
	if lit == nil {
		return 0
	}
	lineOf := func(n ast.Node) int { return prog.File.Position(int(n.Idx0()) - prog.File.Base()).Line }
	// A key written out is where the property was set; failing that, the
	// last spread or computed key, which can have set it; failing that, the
	// object itself.
	line, maybe := 0, lineOf(lit)
	for _, p := range lit.Value {
		var name string
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			switch k := p.Key.(type) {
			case *ast.StringLiteral:
				name = k.Value.String()
			case *ast.Identifier:
				name = k.Name.String()
			}
			if p.Computed {
				name, maybe = "", lineOf(p)
			}
		case *ast.PropertyShort:
			name = p.Name.Name.String()
		case *ast.SpreadElement:
			maybe = lineOf(p)
		}
		if name == key { // the last one written is the one that counts
			line = lineOf(p)
		}
	}
	if line == 0 {
		return maybe
	}
	return line
}
