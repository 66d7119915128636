package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats, for -o.
var formats = []string{"table", "json", "yaml"}

// show writes v as the -o format asks: json and yaml write v whole (its
// JSON field names), table writes the header and rows given for it.
func show(w io.Writer, format string, v any, header []string, rows [][]string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// orDash is s, or "-" when it is empty, for a table's cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// joinComma joins a list for a table's cell.
func joinComma(vs []string) string { return strings.Join(vs, ",") }
