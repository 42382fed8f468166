package samlint

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// This file reads a Makefile as text, the way klt lint learns which Go package a function's
// build-<LogicalId> target builds (BuildMethod: makefile) without running make: GNU make
// expands $(shell ...) and runs "+" recipe lines even under -n, so a lint of an untrusted
// repository must never start it. What is read is the part of make's language whose meaning
// the text alone fixes: variables defined in the file (=, :=, ::=, ?=, +=, and per target),
// $(addprefix), $(addsuffix), $(subst), $(strip), $@, and the target's recipe. Anything whose
// value only running make (or the shell) would tell (an include, a conditional, $(shell),
// another function, a variable from the environment, a pattern rule, .ONESHELL, SHELL) is an
// *unknownMakeError that says so: klt reports it, it never guesses.

// Bounds on reading a Makefile: its size is input.SourceLimit's; these bound the work one
// expansion may cost (recursive variables can double at each level).
const (
	makeMaxDepth  = 32       // nested variable and function references
	makeMaxExpand = 64 << 10 // bytes one expansion may produce
	makeMaxSteps  = 1 << 20  // variable and function references expanded in one reading
	makeMaxNest   = 64       // conditionals and define blocks nested
)

// unknownMakeError is something klt cannot know of a Makefile without running make.
type unknownMakeError struct {
	file string
	line int
	what string
}

func (e *unknownMakeError) Error() string {
	return fmt.Sprintf("%s:%d: %s: what make would do there cannot be known without running make, and klt lint runs nothing of the repository", e.file, e.line, e.what)
}

// makeVar is a variable the Makefile defines.
type makeVar struct {
	value   string // as written (recursive) or as expanded when defined (simple)
	simple  bool   // := ::= : expanded when defined
	env     bool   // ?=: the environment's value, when it has one, wins
	unknown error  // why its value cannot be known; nil when it can
	line    int
}

// makeRule is one rule of the Makefile.
type makeRule struct {
	targets []string
	pattern bool // a target holds %, or a static pattern rule
	line    int
	recipe  []makeLine
	unknown string // why the rule cannot be read (its targets, a conditional around it)
}

// makeLine is a line of a recipe, continuation lines joined.
type makeLine struct {
	text string
	line int
}

// targetVar is a target-specific (or pattern-specific) variable assignment.
type targetVar struct {
	targets []string
	name    string
	v       *makeVar
	op      string
}

// makefile is a Makefile as read from its text.
type makefile struct {
	file    string
	vars    map[string]*makeVar
	tvars   []targetVar
	rules   []*makeRule
	unknown *unknownMakeError // something that makes every target unknowable (include, .ONESHELL...)
	steps   int               // expansion steps spent
}

// physicalLines splits text into logical lines: a line ending in a backslash goes on with the
// next one. Each logical line has the number of its first line; recipe lines keep the
// continuation as the shell would read it (backslash-newline removed, and the next line's
// leading tab with it).
func logicalLines(text string) []makeLine {
	raw := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out []makeLine
	for i := 0; i < len(raw); i++ {
		start, line := i, raw[i]
		for strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) && i+1 < len(raw) {
			i++
			next := raw[i]
			if strings.HasPrefix(raw[start], "\t") {
				line = line[:len(line)-1] + strings.TrimPrefix(next, "\t")
			} else {
				line = strings.TrimRight(line[:len(line)-1], " \t") + " " + strings.TrimLeft(next, " \t")
			}
		}
		out = append(out, makeLine{line, start + 1})
	}
	return out
}

// stripComment removes a # comment (not one escaped as \#) from a line that is not a recipe.
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '#':
			return s[:i]
		}
	}
	return s
}

// assignOps are make's assignment operators, longest first.
var assignOps = []string{":::=", "::=", ":=", "?=", "+=", "!=", "="}

// splitTop finds, outside $(...) and ${...}, the first assignment operator or rule colon of s.
// It returns the index and what was found ("" when neither).
func splitTop(s string) (int, string) {
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
			depth++
			i++
		case depth > 0 && (c == ')' || c == '}'):
			depth--
		case depth == 0:
			for _, op := range assignOps {
				if strings.HasPrefix(s[i:], op) {
					return i, op
				}
			}
			if c == ':' {
				return i, ":"
			}
		}
	}
	return -1, ""
}

// parseMakefile reads the Makefile text of file.
func parseMakefile(file, text string) *makefile {
	m := &makefile{file: file, vars: map[string]*makeVar{}}
	var cond []int     // lines of the open conditionals
	var rule *makeRule // the rule whose recipe lines follow
	lines := logicalLines(text)
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if rule != nil && strings.HasPrefix(ln.text, "\t") {
			if len(cond) > 0 {
				rule.unknown = fmt.Sprintf("its recipe has a line inside the conditional at line %d", cond[len(cond)-1])
			}
			rule.recipe = append(rule.recipe, makeLine{ln.text[1:], ln.line})
			continue
		}
		s := strings.TrimSpace(stripComment(ln.text))
		if s == "" {
			continue
		}
		word, rest, _ := strings.Cut(s, " ")
		word, _, _ = strings.Cut(word, "\t")
		rest = strings.TrimSpace(rest)
		switch word {
		case "ifeq", "ifneq", "ifdef", "ifndef":
			if len(cond) >= makeMaxNest {
				m.fail(ln.line, "conditionals nested more than %d deep", makeMaxNest)
				return m
			}
			cond = append(cond, ln.line)
			rule = nil
			continue
		case "else":
			continue
		case "endif":
			if len(cond) > 0 {
				cond = cond[:len(cond)-1]
			}
			continue
		case "include", "-include", "sinclude":
			m.fail(ln.line, "it includes %s, which klt does not read (an included file may define the target or its variables)", rest)
			continue
		case "load", "-load":
			m.fail(ln.line, "it loads %s into make", rest)
			continue
		case "vpath", "unexport":
			continue
		}
		// Prefixes of an assignment.
		for _, p := range []string{"export", "override", "private"} {
			if word == p {
				s, word = rest, strings.Fields(rest + " x")[0]
			}
		}
		if word == "define" {
			name := strings.Fields(strings.TrimPrefix(s, "define") + " ")
			depth := 1
			for i++; i < len(lines) && depth > 0; i++ {
				switch strings.Fields(lines[i].text + " x")[0] {
				case "define":
					depth++
				case "endef":
					depth--
				}
			}
			i--
			if len(name) > 0 {
				m.vars[name[0]] = &makeVar{unknown: m.unknownAt(ln.line, "%s is a define block, which klt does not expand", name[0]), line: ln.line}
			}
			rule = nil
			continue
		}
		if word == "export" || word == "unexport" || s == "" {
			continue // export NAME...: no value
		}
		at, op := splitTop(s)
		switch {
		case op == "":
			m.fail(ln.line, "the line %q is neither a rule nor a variable: make expands it, and a $(eval ...) or $(call ...) there can define rules", clip(s))
			rule = nil
		case op != ":":
			m.assign(strings.TrimSpace(s[:at]), op, strings.TrimSpace(s[at+len(op):]), ln.line, cond)
			rule = nil
		default:
			rule = m.ruleLine(s[:at], s[at+1:], ln.line, cond)
		}
	}
	if len(cond) > 0 {
		m.fail(cond[len(cond)-1], "a conditional without endif")
	}
	return m
}

// fail records what makes the whole Makefile unknowable (the first such thing).
func (m *makefile) fail(line int, format string, args ...any) {
	if m.unknown == nil {
		m.unknown = &unknownMakeError{m.file, line, fmt.Sprintf(format, args...)}
	}
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// newVar makes the variable of an assignment "name op value" at line, given its old value.
func (m *makefile) newVar(name, op, value string, line int, cond []int, old *makeVar, target string) *makeVar {
	v := &makeVar{value: value, line: line}
	switch op {
	case ":=", "::=":
		v.simple = true
		v.value, v.unknown = m.expandVar(value, target, line)
	case ":::=":
		v.unknown = m.unknownAt(line, "%s is set with :::=, which klt does not read", name)
	case "?=":
		if old != nil {
			return old
		}
		v.env = true
	case "!=":
		v.unknown = m.unknownAt(line, "%s is set by running a shell command (!=)", name)
	case "+=":
		switch {
		case old == nil:
			v.unknown = m.unknownAt(line, "%s is appended to with no value in the Makefile before: its value would come from the environment", name)
		case old.simple:
			add, why := m.expandVar(value, target, line)
			if old.unknown != nil {
				why = old.unknown
			}
			v = &makeVar{value: old.value + " " + add, simple: true, env: old.env, unknown: why, line: line}
		default:
			v = &makeVar{value: old.value + " " + value, env: old.env, unknown: old.unknown, line: line}
		}
	}
	if len(cond) > 0 {
		v.unknown = m.unknownAt(line, "%s is set inside the conditional at line %d", name, cond[len(cond)-1])
	}
	switch name {
	case "SHELL", ".SHELLFLAGS", ".RECIPEPREFIX", "MAKEFLAGS", "MAKEFILES", "GNUMAKEFLAGS":
		m.fail(line, "it sets %s, which changes how make reads the file or runs the recipes", name)
	}
	return v
}

// unknownAt returns an *unknownMakeError at line of the Makefile.
func (m *makefile) unknownAt(line int, format string, args ...any) error {
	return &unknownMakeError{m.file, line, fmt.Sprintf(format, args...)}
}

// expandVar expands the value of a simple variable when it is defined; its error is why the
// variable's value cannot be known.
func (m *makefile) expandVar(value, target string, line int) (string, error) {
	x := &expansion{m: m, target: target, line: line}
	return x.expand(value, 0)
}

// assign records a global assignment.
func (m *makefile) assign(name, op, value string, line int, cond []int) {
	if strings.ContainsAny(name, "$ \t") {
		m.fail(line, "the variable name %q is computed: klt does not expand it", clip(name))
		return
	}
	m.vars[name] = m.newVar(name, op, value, line, cond, m.vars[name], "")
}

// ruleLine reads a rule or target-specific assignment: "targets : rest" at line.
func (m *makefile) ruleLine(targetText, rest string, line int, cond []int) *makeRule {
	r := &makeRule{line: line}
	rest = strings.TrimPrefix(rest, ":") // double-colon rule: each rule's recipe runs, as they are read
	targetText = strings.TrimSuffix(strings.TrimSpace(targetText), "&")
	x := &expansion{m: m, line: line}
	targets, err := x.expand(targetText, 0)
	if err != nil {
		what := err.Error()
		if ue, ok := errors.AsType[*unknownMakeError](err); ok {
			what = ue.what
		}
		r.unknown = fmt.Sprintf("its targets cannot be expanded (%s)", what)
	}
	r.targets = strings.Fields(targets)
	if len(cond) > 0 {
		r.unknown = fmt.Sprintf("it is inside the conditional at line %d", cond[len(cond)-1])
	}
	recipe, hasRecipe := "", false
	if i := semicolon(rest); i >= 0 {
		rest, recipe, hasRecipe = rest[:i], rest[i+1:], true
	}
	if at, op := splitTop(rest); op != "" && op != ":" {
		// A target-specific variable: "targets: [override|export|private] NAME op value".
		name := strings.TrimSpace(rest[:at])
		for _, p := range []string{"override ", "export ", "private "} {
			name = strings.TrimSpace(strings.TrimPrefix(name, p))
		}
		value := strings.TrimSpace(rest[at+len(op):])
		if hasRecipe {
			value += ";" + recipe
		}
		for _, t := range r.targets {
			var old *makeVar
			for _, tv := range m.tvars {
				if tv.name == name && slices.Contains(tv.targets, t) {
					old = tv.v
				}
			}
			if old == nil {
				old = m.vars[name]
			}
			v := m.newVar(name, op, value, line, cond, old, t)
			if r.unknown != "" && v.unknown == nil {
				v.unknown = m.unknownAt(line, "%s is set for targets that cannot be read: %s", name, r.unknown)
			}
			m.tvars = append(m.tvars, targetVar{targets: []string{t}, name: name, v: v, op: op})
		}
		if r.unknown != "" && len(r.targets) == 0 {
			m.fail(line, "a target-specific variable is set for targets klt cannot read: %s", r.unknown)
		}
		return nil // no recipe follows a target-specific assignment
	} else if op == ":" {
		r.pattern = true // a static pattern rule: "targets: target-pattern: prereqs"
	}
	for _, t := range r.targets {
		if strings.Contains(t, "%") {
			r.pattern = true
		}
		switch t {
		case ".ONESHELL":
			m.fail(line, ".ONESHELL runs a recipe's lines in one shell")
		case ".DEFAULT":
			r.pattern = true // its recipe serves any target without a rule
		}
	}
	if hasRecipe {
		r.recipe = append(r.recipe, makeLine{recipe, line})
	}
	m.rules = append(m.rules, r)
	return r
}

// semicolon returns the index of the ";" that starts a recipe on a rule line, outside $(...).
func semicolon(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '$':
			if i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{') {
				depth++
				i++
			}
		case ')', '}':
			if depth > 0 {
				depth--
			}
		case ';':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// targetRecipe returns the recipe of target, expanded, a line at a time: what make would hand
// the shell (before the @, - and + prefixes, which it strips). sets says which variables
// the environment may set, for the caller to refuse where a value matters.
func (m *makefile) targetRecipe(target string) ([]expandedLine, error) {
	if m.unknown != nil {
		return nil, m.unknown
	}
	var recipe []makeLine
	found := false
	for _, r := range m.rules {
		if r.unknown != "" {
			return nil, &unknownMakeError{m.file, r.line, "a rule " + r.unknown + ", and it may be the one of " + target}
		}
		if !slices.Contains(r.targets, target) {
			continue
		}
		if r.pattern {
			return nil, &unknownMakeError{m.file, r.line, target + " is a target of a static pattern rule, which klt does not expand"}
		}
		found = true
		if len(r.recipe) > 0 {
			recipe = append(recipe, r.recipe...) // double-colon rules run in turn; a single-colon one is given one recipe
		}
	}
	if !found || len(recipe) == 0 {
		for _, r := range m.rules {
			if r.pattern {
				return nil, &unknownMakeError{m.file, r.line, "the Makefile has no recipe of its own for " + target + ", and a pattern rule (or .DEFAULT) may give it one, which klt does not expand"}
			}
		}
		if !found {
			return nil, fmt.Errorf("%s has no %s target, which sam build runs (make %s)", m.file, target, target)
		}
		return nil, fmt.Errorf("%s: the %s target has no recipe, so sam build would build nothing", m.file, target)
	}
	for _, tv := range m.tvars {
		if tv.v.unknown != nil && slices.Contains(tv.targets, target) {
			return nil, tv.v.unknown
		}
		for _, t := range tv.targets {
			if strings.Contains(t, "%") && patternMatches(t, target) {
				return nil, &unknownMakeError{m.file, tv.v.line, "a pattern-specific variable " + tv.name + " applies to " + target + ", which klt does not expand"}
			}
		}
	}
	var out []expandedLine
	for _, l := range recipe {
		text := strings.TrimLeft(l.text, " \t")
		text = strings.TrimLeft(text, "@-+ \t")
		x := &expansion{m: m, target: target, line: l.line, recipe: true}
		s, err := x.expand(text, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, expandedLine{s, l.line})
	}
	return out, nil
}

// expandedLine is a recipe line as make would give it to the shell. Values of variables the
// environment may set (?=) are between envStart and envEnd.
type expandedLine struct {
	text string
	line int
}

// The marks around the value of a variable set with ?=, whose value the environment may give.
const (
	envStart = '\x01'
	envEnd   = '\x02'
)

// patternMatches reports whether target matches the make pattern p (one %).
func patternMatches(p, target string) bool {
	pre, suf, _ := strings.Cut(p, "%")
	return len(target) >= len(pre)+len(suf) && strings.HasPrefix(target, pre) && strings.HasSuffix(target, suf)
}

// expansion is one expansion of text, as make expands it.
type expansion struct {
	m      *makefile
	target string // for $@ and the target's own variables
	line   int
	recipe bool // expanding a recipe: ARTIFACTS_DIR is sam build's
}

// The functions of GNU make klt evaluates: they compute text from text.
var pureFuncs = map[string]int{"addprefix": 2, "addsuffix": 2, "subst": 3, "strip": 1}

// makeFuncs are GNU make's other functions: a call of one is unknown.
var makeFuncs = []string{"shell", "eval", "call", "value", "foreach", "if", "or", "and", "wildcard", "realpath",
	"abspath", "file", "origin", "flavor", "error", "warning", "info", "guile", "let", "intcmp", "patsubst",
	"findstring", "filter", "filter-out", "sort", "word", "wordlist", "words", "firstword", "lastword", "dir",
	"notdir", "suffix", "basename", "join"}

func (x *expansion) unknown(format string, args ...any) error {
	return &unknownMakeError{x.m.file, x.line, fmt.Sprintf(format, args...)}
}

// expand expands the references of s.
func (x *expansion) expand(s string, depth int) (string, error) {
	if depth > makeMaxDepth {
		return "", x.unknown("references nested more than %d deep (a variable that refers to itself?)", makeMaxDepth)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if b.Len() > makeMaxExpand {
			return "", x.unknown("an expansion longer than %d bytes", makeMaxExpand)
		}
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			break // a lone $ at the end expands to nothing
		}
		x.m.steps++
		if x.m.steps > makeMaxSteps {
			return "", x.unknown("more than %d references to expand", makeMaxSteps)
		}
		c := s[i+1]
		var ref string
		switch c {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(', '{':
			end := matchParen(s, i+1)
			if end < 0 {
				return "", x.unknown("an unterminated variable reference")
			}
			ref, i = s[i+2:end], end
		default:
			ref, i = string(c), i+1
		}
		v, err := x.reference(ref, c == '(' || c == '{', depth)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// matchParen returns the index of the parenthesis that closes the one at open, or -1. Like
// make, it counts only parentheses of the same kind.
func matchParen(s string, open int) int {
	o := s[open]
	cl := byte(')')
	if o == '{' {
		cl = '}'
	}
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case o:
			depth++
		case cl:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// reference expands one reference, the text between $( and ) (or a single character).
func (x *expansion) reference(ref string, paren bool, depth int) (string, error) {
	if paren {
		if name, args, ok := strings.Cut(ref, " "); ok || strings.Contains(ref, "\t") {
			if !ok {
				name, args, _ = strings.Cut(ref, "\t")
			}
			if n, pure := pureFuncs[name]; pure {
				return x.call(name, args, n, depth)
			}
			if name == "shell" {
				return "", x.unknown("$(shell %s) runs a command", clip(args))
			}
			if slices.Contains(makeFuncs, name) {
				return "", x.unknown("$(%s ...) is a make function klt does not evaluate", name)
			}
		}
		if strings.Contains(ref, ":") && strings.Contains(ref, "=") {
			return "", x.unknown("$(%s) is a substitution reference, which klt does not evaluate", clip(ref))
		}
	}
	name, err := x.expand(ref, depth+1) // a computed name: $($(X)_PKG)
	if err != nil {
		return "", err
	}
	return x.variable(name, depth)
}

// call evaluates one of pureFuncs with the comma-separated args.
func (x *expansion) call(name, args string, n, depth int) (string, error) {
	parts := splitArgs(args, n)
	if len(parts) != n {
		return "", x.unknown("$(%s ...) takes %d arguments", name, n)
	}
	for i, p := range parts {
		v, err := x.expand(p, depth+1)
		if err != nil {
			return "", err
		}
		parts[i] = v
	}
	switch name {
	case "strip":
		return strings.Join(strings.Fields(parts[0]), " "), nil
	case "subst":
		return strings.ReplaceAll(parts[2], parts[0], parts[1]), nil
	}
	words := strings.Fields(parts[1])
	for i, w := range words {
		if name == "addprefix" {
			words[i] = parts[0] + w
		} else {
			words[i] = w + parts[0]
		}
	}
	return strings.Join(words, " "), nil
}

// splitArgs splits a function's arguments at the first n-1 commas outside parentheses.
func splitArgs(s string, n int) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s) && len(out) < n-1; i++ {
		switch s[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// variable returns the value of the variable name for the expansion's target.
func (x *expansion) variable(name string, depth int) (string, error) {
	switch name {
	case "@":
		if x.target == "" {
			return "", x.unknown("$@ outside a recipe")
		}
		return x.target, nil
	case "<", "^", "+", "?", "*", "|", "%", "@D", "@F", "<D", "<F", "^D", "^F", "*D", "*F":
		return "", x.unknown("the automatic variable $%s, which klt does not evaluate", name)
	case "MAKE":
		return "make", nil
	}
	v := x.m.vars[name]
	for _, tv := range x.m.tvars {
		if tv.name == name && slices.Contains(tv.targets, x.target) {
			v = tv.v
		}
	}
	if v == nil {
		if name == "ARTIFACTS_DIR" && x.recipe {
			return "ARTIFACTS_DIR", nil // sam build sets it: the output's directory, not the package
		}
		return "", x.unknown("$(%s) is not set in the Makefile: its value would come from the environment or from make itself", name)
	}
	if v.unknown != nil {
		return "", v.unknown
	}
	s := v.value
	if !v.simple {
		var err error
		if s, err = x.expand(s, depth+1); err != nil {
			return "", err
		}
	}
	if v.env {
		s = string(envStart) + s + string(envEnd)
	}
	return s, nil
}

// errNoGoBuild says a recipe has no go build command klt can read.
var errNoGoBuild = errors.New("no go build command")

// goBuildPackage returns the directory of the one package the recipe lines build with go
// build, run in dir, and the line of that command.
func goBuildPackage(file, dir string, lines []expandedLine) (string, int, error) {
	found, at := "", 0
	for _, l := range lines {
		for _, cmd := range goBuilds(l.text) {
			if cmd.unknown != "" {
				return "", 0, &unknownMakeError{file, l.line, cmd.unknown}
			}
			p, err := buildArgsPackage(file, l.line, filepath.Join(dir, cmd.dir), cmd.args)
			if err != nil {
				return "", 0, err
			}
			if found != "" && found != p {
				return "", 0, fmt.Errorf("%s:%d and %d: the recipe builds two packages (%s and %s), so klt cannot tell which is the function's", file, at, l.line, found, p)
			}
			found, at = p, l.line
		}
	}
	if found == "" {
		return "", 0, errNoGoBuild
	}
	return found, at, nil
}

// buildArgsPackage returns the directory of the package of the arguments of go build (after
// "build"), run in dir.
func buildArgsPackage(file string, line int, dir string, args []string) (string, error) {
	valued := []string{"-o", "-p", "-asmflags", "-buildmode", "-compiler", "-gccgoflags", "-gcflags", "-installsuffix",
		"-ldflags", "-mod", "-modfile", "-overlay", "-pgo", "-pkgdir", "-tags", "-toolexec", "-coverpkg", "-covermode"}
	var pkgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || strings.HasPrefix(a, "-C="):
			d, ok := strings.CutPrefix(a, "-C=")
			if !ok && i+1 < len(args) {
				i++
				d = args[i]
			}
			if strings.ContainsAny(d, string([]rune{envStart, envEnd})) {
				return "", &unknownMakeError{file, line, "go build -C names a directory the environment may set (a ?= variable)"}
			}
			dir = resolvePath(dir, d)
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			if slices.Contains(valued, strings.TrimPrefix(a, "-")) || slices.Contains(valued, a) || slices.Contains(valued, "-"+strings.TrimLeft(a, "-")) {
				i++
			}
		case strings.HasPrefix(a, "-"):
		default:
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		return filepath.Clean(dir), nil
	}
	p := pkgs[0]
	switch {
	case strings.ContainsAny(strings.Join(pkgs, " "), string([]rune{envStart, envEnd})):
		return "", &unknownMakeError{file, line, "the package of go build comes from a variable set with ?=, which the environment may set"}
	case strings.HasSuffix(p, ".go"):
		for _, q := range pkgs {
			if filepath.Dir(q) != filepath.Dir(p) {
				return "", fmt.Errorf("%s:%d: go build of Go files in two directories", file, line)
			}
		}
		return resolvePath(dir, filepath.Dir(p)), nil
	case len(pkgs) > 1:
		return "", fmt.Errorf("%s:%d: go build of %d packages (%s), so klt cannot tell which is the function's", file, line, len(pkgs), strings.Join(pkgs, " "))
	case strings.Contains(p, "..."):
		return "", fmt.Errorf("%s:%d: go build of the pattern %s, so klt cannot tell which package is the function's", file, line, p)
	case p == "." || p == ".." || filepath.IsAbs(p) || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../"):
		return resolvePath(dir, p), nil
	}
	root, mod, err := findModule(dir)
	if err != nil {
		return "", err
	}
	if rel, ok := strings.CutPrefix(p, mod+"/"); ok && mod != "" {
		return filepath.Join(root, filepath.FromSlash(rel)), nil
	}
	if p == mod && mod != "" {
		return root, nil
	}
	return "", fmt.Errorf("%s:%d: go build of %s, a package of another module than the one around %s", file, line, p, dir)
}

// resolvePath returns p relative to dir, or p when absolute.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}
