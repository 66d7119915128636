package graph_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestSchemaDescribed: everything in the schema has a description, since callers read it in the API explorer and by introspection.
func TestSchemaDescribed(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("schema/*.graphqls")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	sources := make([]*ast.Source, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources[i] = &ast.Source{Name: p, Input: string(b)}
	}
	schema, gerr := gqlparser.LoadSchema(sources...)
	if gerr != nil {
		t.Fatalf("load the schema: %v", gerr)
	}
	var missing []string
	check := func(description, what string, pos *ast.Position) {
		if strings.TrimSpace(description) != "" {
			return
		}
		where := "?"
		if pos != nil && pos.Src != nil {
			where = fmt.Sprintf("%s:%d", pos.Src.Name, pos.Line)
		}
		missing = append(missing, fmt.Sprintf("%s: %s", where, what))
	}
	names := make([]string, 0, len(schema.Types))
	for name := range schema.Types {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d := schema.Types[name]
		if d.BuiltIn || strings.HasPrefix(name, "__") {
			continue
		}
		kind := strings.ToLower(strings.ReplaceAll(string(d.Kind), "_", " "))
		check(d.Description, kind+" "+name, d.Position)
		for _, f := range d.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			check(f.Description, name+"."+f.Name, f.Position)
			for _, a := range f.Arguments {
				check(a.Description, name+"."+f.Name+"("+a.Name+")", a.Position)
			}
		}
		for _, v := range d.EnumValues {
			check(v.Description, name+"."+v.Name, v.Position)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d definitions have no description (a string before them):\n%s", len(missing), strings.Join(missing, "\n"))
	}
}
