package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/iam"
)

// Validating a document costs more than linear time in its size (the
// overlapping-fields check compares selections pairwise), so documents are
// bounded before they are validated: their tokens by a lexer pass before
// parsing, the depth and number of their selections (fragments expanded)
// once parsed, and the whole of it by a deadline that stops validation.
//
// documents does the parsing and validating itself, as the first operation
// parameter mutator, and leaves the document in the operation context,
// where gqlgen's query cache (handoff) finds it: so gqlgen never parses or
// validates a document these limits did not pass.
type documents struct {
	schema *ast.Schema
	limits Limits
	log    *slog.Logger
	// passed holds documents that passed, by their text: the
	// subscribers of one page or client send the same document, and
	// share its parsed form instead of each holding its own (about 2.5
	// KiB of an instanceEvents subscription's) and parsing it again.
	passed *lru.LRU[*ast.QueryDocument]
}

// Bounds of documents.passed: a document parses to some 30 times its
// text, so what it holds stays under ~16 MiB.
const (
	maxPassed      = 128
	maxPassedBytes = 4 << 10 // a longer document is checked every time
)

func newDocuments(schema *ast.Schema, limits Limits, log *slog.Logger) documents {
	return documents{schema: schema, limits: limits, log: log, passed: lru.New[*ast.QueryDocument](maxPassed)}
}

var (
	_ graphql.HandlerExtension          = documents{}
	_ graphql.OperationParameterMutator = documents{}
)

func (documents) ExtensionName() string                   { return "DocumentLimits" }
func (documents) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters refuses a document past a limit, anonymous
// callers, and operations the transport they came by does not serve.
func (d documents) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if iam.FromContext(ctx) == nil {
		return toGQL(errUnauthenticated, nil)
	}
	doc, err := d.checked(ctx, params.Query)
	if err != nil {
		if err.Limit != "" {
			d.log.WarnContext(ctx, "graphql document refused", "reason", err.Limit, "bytes", len(params.Query), "request_id", audit.RequestID(ctx))
		}
		return toGQL(err, nil)
	}
	op := doc.Operations.ForName(params.OperationName)
	switch {
	case op == nil:
		return toGQL(apierr.Invalid("operationName", "the document has no operation named %q", params.OperationName), nil)
	case op.Operation == ast.Subscription && connFrom(ctx) == nil:
		return toGQL(apierr.New(apierr.InvalidInput, "subscriptions are served over a websocket only"), nil)
	case op.Operation == ast.Mutation && methodFrom(ctx) == "GET":
		return toGQL(apierr.New(apierr.InvalidInput, "send mutations by POST"), nil)
	}
	graphql.GetOperationContext(ctx).Doc = doc
	return nil
}

// checked is check's document of query, from passed when it is there.
// A document is the same for every caller: what it may do is judged
// after, for each operation.
func (d documents) checked(ctx context.Context, query string) (*ast.QueryDocument, *apierr.Error) {
	if doc, ok := d.passed.Get(ctx, query); ok {
		return doc, nil
	}
	doc, err := d.check(ctx, query)
	if err == nil && len(query) <= maxPassedBytes {
		d.passed.Add(ctx, query, doc)
	}
	return doc, err
}

// check lexes, parses and validates query within the limits.
func (d documents) check(ctx context.Context, query string) (*ast.QueryDocument, *apierr.Error) {
	ctx, cancel := context.WithTimeout(ctx, d.limits.DocumentTimeout)
	defer cancel()
	if tokens(query, d.limits.MaxTokens) > d.limits.MaxTokens {
		return nil, refused("tokens", "the document has more than %d tokens", d.limits.MaxTokens)
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil, apierr.New(apierr.InvalidInput, "%s", message(err))
	}
	if len(doc.Operations) == 0 {
		return nil, apierr.New(apierr.InvalidInput, "the document has no operation")
	}
	s := measure(doc)
	if s.depth > d.limits.MaxDepth {
		return nil, refused("depth", "the document nests fields deeper than %d", d.limits.MaxDepth)
	}
	if s.selections > d.limits.MaxSelections {
		return nil, refused("selections", "the document selects more than %d fields, fragments counted at each spread", d.limits.MaxSelections)
	}
	errs, ok := validate(ctx, d.schema, doc)
	if !ok {
		return nil, refused("time", "the document was not validated within %v", d.limits.DocumentTimeout)
	}
	if len(errs) > 0 {
		msg := message(errs[0])
		if len(errs) > 1 {
			msg += fmt.Sprintf(" (and %d more errors)", len(errs)-1)
		}
		return nil, apierr.New(apierr.InvalidInput, "%s", msg)
	}
	return doc, nil
}

// refused is the error of a document past a limit.
func refused(limit, format string, args ...any) *apierr.Error {
	return &apierr.Error{Code: apierr.InvalidInput, Limit: limit, Message: fmt.Sprintf(format, args...)}
}

// message is the message of a parse or validation error, with its location.
func message(err error) string {
	var e *gqlerror.Error
	if errors.As(err, &e) && len(e.Locations) > 0 {
		return fmt.Sprintf("%s (line %d, column %d)", e.Message, e.Locations[0].Line, e.Locations[0].Column)
	}
	return err.Error()
}

// tokens counts the lexical tokens of query, stopping past max. A lexical
// error stops the count; the parser reports it.
func tokens(query string, max int) int {
	lex := lexer.New(&ast.Source{Input: query})
	n := 0
	for n <= max {
		tok, err := lex.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			break
		}
		n++
	}
	return n
}

// size is how deep a selection set nests and how many fields it selects.
type size struct{ depth, selections int }

// measure returns the size of doc's operations together, each fragment
// counted wherever it is spread. A fragment's size is computed once, so a
// fragment spread twice in each of n nested fragments costs n steps, not
// 2^n; counts saturate rather than overflow.
func measure(doc *ast.QueryDocument) size {
	m := measurer{frags: map[string]*ast.FragmentDefinition{}, known: map[string]size{}, visiting: map[string]bool{}}
	for _, f := range doc.Fragments {
		m.frags[f.Name] = f
	}
	var total size
	for _, op := range doc.Operations {
		s := m.set(op.SelectionSet)
		total.depth = max(total.depth, s.depth)
		total.selections = saturatingAdd(total.selections, s.selections)
	}
	return total
}

type measurer struct {
	frags    map[string]*ast.FragmentDefinition
	known    map[string]size
	visiting map[string]bool // fragments being measured: a cycle, which validation refuses
}

func (m *measurer) set(set ast.SelectionSet) size {
	var out size
	for _, sel := range set {
		var s size
		switch sel := sel.(type) {
		case *ast.Field:
			s = m.set(sel.SelectionSet)
			s.depth++
			s.selections = saturatingAdd(s.selections, 1)
		case *ast.InlineFragment:
			s = m.set(sel.SelectionSet)
		case *ast.FragmentSpread:
			s = m.fragment(sel.Name)
		}
		out.depth = max(out.depth, s.depth)
		out.selections = saturatingAdd(out.selections, s.selections)
	}
	return out
}

func (m *measurer) fragment(name string) size {
	if s, ok := m.known[name]; ok {
		return s
	}
	f := m.frags[name]
	if f == nil || m.visiting[name] {
		return size{}
	}
	m.visiting[name] = true
	s := m.set(f.SelectionSet)
	delete(m.visiting, name)
	m.known[name] = s
	return s
}

func saturatingAdd(a, b int) int {
	if a > math.MaxInt32-b {
		return math.MaxInt32
	}
	return a + b
}

// errDeadline stops validation from inside a rule when its deadline passes.
var errDeadline = errors.New("document deadline")

// validate validates doc against schema with gqlparser's default rules,
// giving up when ctx ends; ok is false if it gave up. gqlparser's walk
// takes no context, so a rule of its own, seen at every field, fragment
// and value, stops it by panicking with errDeadline.
func validate(ctx context.Context, schema *ast.Schema, doc *ast.QueryDocument) (errs gqlerror.List, ok bool) {
	if ctx.Err() != nil {
		return nil, false
	}
	defer func() {
		if r := recover(); r != nil {
			if r != errDeadline {
				panic(r)
			}
			errs, ok = nil, false
		}
	}()
	rs := rules.NewDefaultRules()
	rs.AddRule("Deadline", func(on *core.Events, _ core.AddErrFunc) {
		stop := func() {
			if ctx.Err() != nil {
				panic(errDeadline)
			}
		}
		on.OnField(func(*core.Walker, *ast.Field) { stop() })
		on.OnFragment(func(*core.Walker, *ast.FragmentDefinition) { stop() })
		on.OnFragmentSpread(func(*core.Walker, *ast.FragmentSpread) { stop() })
		on.OnInlineFragment(func(*core.Walker, *ast.InlineFragment) { stop() })
		on.OnValue(func(*core.Walker, *ast.Value) { stop() })
	})
	return validator.ValidateWithRules(schema, doc, rs), true
}

// handoff is the query cache gqlgen consults before parsing a document: it
// holds, for one operation, the document documents checked.
type handoff struct{}

func (handoff) Get(ctx context.Context, _ string) (*ast.QueryDocument, bool) {
	if !graphql.HasOperationContext(ctx) {
		return nil, false
	}
	doc := graphql.GetOperationContext(ctx).Doc
	return doc, doc != nil
}

func (handoff) Add(context.Context, string, *ast.QueryDocument) {}
