package samlint

import (
	"path"
	"regexp"
	"strings"
)

// This file reads the go build commands of a recipe line as the shell would run them, for the
// narrow form a Makefile writes them in: words, '...' and "..." quotes, backslash escapes,
// NAME=value prefixes, "cd DIR &&" before, redirections, and the operators && || ; | &.
// A go build command that uses anything the shell would compute (a $ expansion, a backquote,
// a glob, a subshell) is unknown: klt says so and does not guess.

// goBuildCmd is one go build command of a recipe line.
type goBuildCmd struct {
	dir     string   // the directory a preceding cd moved to, relative to the recipe's ("" for none)
	args    []string // the words after "build"
	unknown string   // why the command cannot be read; "" when it can
}

// shWord is a word of a shell line, or an operator.
type shWord struct {
	text  string
	op    string // && || ; | & ( ) or a newline; "" for a word
	plain bool   // nothing in it that the shell expands
	redir bool   // the target of a redirection, not an argument
}

// shellWords splits a shell line into words and operators.
func shellWords(s string) []shWord {
	var out []shWord
	var cur strings.Builder
	in, plain, redir := false, true, false
	flush := func() {
		if in {
			out = append(out, shWord{text: cur.String(), plain: plain, redir: redir})
			redir = false
		}
		cur.Reset()
		in, plain = false, true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !in:
			return out
		case c == '\'':
			in = true
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				plain = false
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			in = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					i++
					cur.WriteByte(s[i])
				case s[i] == '$' || s[i] == '`':
					plain = false
					cur.WriteByte(s[i])
				default:
					cur.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				plain = false
			}
		case c == '\\':
			in = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		case c == '>' || c == '<':
			if in && strings.Trim(cur.String(), "0123456789") == "" {
				cur.Reset() // a file descriptor: 2>
				in = false
			}
			flush()
			for i+1 < len(s) && strings.IndexByte("<>&|", s[i+1]) >= 0 {
				i++
			}
			redir = true
		case c == '&' || c == '|' || c == ';' || c == '(' || c == ')' || c == '\n':
			flush()
			op := string(c)
			if (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c {
				op += string(c)
				i++
			}
			out = append(out, shWord{op: op})
		default:
			in = true
			if strings.IndexByte("$`*?[~", c) >= 0 {
				plain = false
			}
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// assignWord matches a NAME=value prefix of a command.
var assignWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// goBuilds returns the go build commands of a recipe line (after make's expansion).
func goBuilds(line string) []goBuildCmd {
	words := shellWords(line)
	var out []goBuildCmd
	dir, dirUnknown, grouped := "", "", false
	for _, w := range words {
		if w.op == "(" || w.op == ")" || w.op == "" && w.text == "{" {
			grouped = true
		}
	}
	for start := 0; start < len(words); {
		end := start
		for end < len(words) && words[end].op == "" {
			end++
		}
		var cmd []shWord
		for _, w := range words[start:end] {
			if !w.redir {
				cmd = append(cmd, w)
			}
		}
		var sep string
		if end < len(words) {
			sep = words[end].op
		}
		start = end + 1
		// Skip NAME=value prefixes, and env, exec or command before the program.
		i := 0
		for i < len(cmd) && (assignWord.MatchString(cmd[i].text) || i == 0 && (cmd[i].text == "env" || cmd[i].text == "exec" || cmd[i].text == "command")) {
			i++
		}
		if i >= len(cmd) {
			continue
		}
		prog := cmd[i]
		switch {
		case prog.text == "cd" && prog.plain:
			switch {
			case len(cmd) != i+2 || !cmd[i+1].plain || strings.ContainsAny(cmd[i+1].text, string([]rune{envStart, envEnd})):
				dirUnknown = "it follows a cd whose directory the shell or the environment computes"
			case sep == "&&" || sep == ";":
				dir = path.Join(dir, cmd[i+1].text)
				if strings.HasPrefix(cmd[i+1].text, "/") {
					dir = cmd[i+1].text
				}
			}
			continue
		case prog.text == "pushd" || prog.text == "popd" || prog.text == "." || prog.text == "source" || prog.text == "eval":
			dirUnknown = "it follows " + prog.text + ", which klt does not follow"
			continue
		}
		if i+1 >= len(cmd) || cmd[i+1].text != "build" {
			continue
		}
		name := strings.Trim(prog.text, string([]rune{envStart, envEnd}))
		isGo := path.Base(name) == "go" || strings.HasPrefix(path.Base(name), "go1.")
		if prog.plain && !isGo {
			continue
		}
		c := goBuildCmd{dir: dir}
		switch {
		case !prog.plain:
			c.unknown = "a command the shell names (" + prog.text + ") runs build: klt cannot tell whether it is go build"
		case dirUnknown != "":
			c.unknown = "the go build command's directory is unknown: " + dirUnknown
		case grouped:
			c.unknown = "the go build command is on a line with a subshell or a { } group, which klt does not follow"
		}
		for _, a := range cmd[i+2:] {
			if !a.plain && c.unknown == "" {
				c.unknown = "an argument of go build (" + a.text + ") is one the shell computes ($, `, a glob or ~)"
			}
			c.args = append(c.args, a.text)
		}
		out = append(out, c)
	}
	return out
}
