package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/internal/text"
)

// checkInputs checks every argument of the operation in ctx against the
// schema before any resolver runs: each string (String, ID and custom
// scalars, map keys and values included, in nested input objects and lists,
// given inline or as variables) must be text the platform can store, and
// each Int must fit GraphQL's 32 bits, as the spec says and as the
// database's columns do; gqlgen's Int is a Go int, so a variable of
// 4294967297 would otherwise be truncated to 1 on its way to an int32. A
// bad value is INVALID_INPUT naming the field as resolvers do: relative to
// a mutation's input (sshKeys[1]), else from the argument (filter.name).
func checkInputs(ctx context.Context, schema *ast.Schema) error {
	if !graphql.HasOperationContext(ctx) {
		return nil
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil {
		return nil
	}
	c := inputChecker{schema: schema, vars: oc.Variables, seen: map[*ast.FragmentDefinition]bool{}}
	return c.selections(oc.Operation.SelectionSet)
}

type inputChecker struct {
	schema *ast.Schema
	vars   map[string]any
	// seen keeps a fragment spread many times from being walked again.
	seen map[*ast.FragmentDefinition]bool
}

func (c *inputChecker) selections(set ast.SelectionSet) error {
	for _, sel := range set {
		var err error
		switch s := sel.(type) {
		case *ast.Field:
			if err = c.field(s); err == nil {
				err = c.selections(s.SelectionSet)
			}
		case *ast.InlineFragment:
			err = c.selections(s.SelectionSet)
		case *ast.FragmentSpread:
			if s.Definition != nil && !c.seen[s.Definition] {
				c.seen[s.Definition] = true
				err = c.selections(s.Definition.SelectionSet)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *inputChecker) field(f *ast.Field) error {
	if f.Definition == nil {
		return nil
	}
	for _, arg := range f.Arguments {
		def := f.Definition.Arguments.ForName(arg.Name)
		if def == nil {
			continue
		}
		root := arg.Name
		if root == "input" {
			root = "" // fields of a mutation's input are named from there
		}
		v, err := arg.Value.Value(c.vars)
		if err != nil {
			return apierr.Invalid(arg.Name, "is not a valid %s", def.Type.Name())
		}
		if err := c.value(root, def.Type, v); err != nil {
			return err
		}
	}
	return nil
}

// value checks v, given for a value of type t at path.
func (c *inputChecker) value(path string, t *ast.Type, v any) error {
	if v == nil {
		return nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return c.value(path+"[0]", t.Elem, v) // one value coerces to a list of it
		}
		for i, e := range list {
			if err := c.value(fmt.Sprintf("%s[%d]", path, i), t.Elem, e); err != nil {
				return err
			}
		}
		return nil
	}
	def := c.schema.Types[t.NamedType]
	if def == nil {
		return nil
	}
	switch def.Kind {
	case ast.InputObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // validation refused it already
		}
		for _, f := range def.Fields {
			if fv, ok := obj[f.Name]; ok {
				if err := c.value(join(path, f.Name), f.Type, fv); err != nil {
					return err
				}
			}
		}
	case ast.Scalar:
		switch def.Name {
		case "Int":
			return checkInt32(path, v)
		case "Boolean", "Float":
			return nil
		}
		return checkStrings(path, v)
	}
	return nil
}

// checkInt32 refuses an Int outside 32 bits.
func checkInt32(path string, v any) error {
	var n float64
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return apierr.Invalid(path, "must be a whole number between %d and %d", math.MinInt32, math.MaxInt32)
		}
		n = float64(i)
	case string:
		i, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return apierr.Invalid(path, "must be a whole number between %d and %d", math.MinInt32, math.MaxInt32)
		}
		n = float64(i)
	default:
		rv := reflect.ValueOf(v)
		switch {
		case rv.CanInt():
			n = float64(rv.Int())
		case rv.CanUint():
			n = float64(rv.Uint())
		case rv.CanFloat():
			n = rv.Float()
		default:
			return nil
		}
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return apierr.Invalid(path, "must be between %d and %d", math.MinInt32, math.MaxInt32)
	}
	return nil
}

// checkStrings checks the strings of a scalar's value: the value itself, or
// every key and value of a Map, however deep.
func checkStrings(path string, v any) error {
	switch x := v.(type) {
	case string:
		if err := text.Check(x); err != nil {
			return apierr.Invalid(path, "%v", err)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the same input names the same field
		for _, k := range keys {
			if err := text.Check(k); err != nil {
				return apierr.Invalid(path, "has a key that %v", err)
			}
			if err := checkStrings(join(path, k), x[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkStrings(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
