package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printUsage writes the binary's help: its commands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "usage: better-compute <command> [flags]\n\ncommands:\n")
	var rows [][3]string
	for _, c := range commands() {
		rows = append(rows, [3]string{"  " + c.name, c.summary})
	}
	rows = append(rows,
		[3]string{"  help", "print this help, or a command's (better-compute help <command>)"},
		[3]string{"  version", "print the version and the commit it was built from"})
	writeColumns(w, rows)
	fmt.Fprint(w, "\nbetter-compute <command> --help lists the environment variables and flags the command reads.\n")
}

// printHelp writes c's help: its usage, and the environment variables and
// flags it reads, in aligned columns with their defaults.
func (c command) printHelp(w io.Writer) {
	line := c.name
	if c.verb != "" {
		line += " " + c.verb
	}
	fmt.Fprintf(w, "usage: better-compute %s [flags]\n\n%s%s.\n\n", line, strings.ToUpper(c.summary[:1]), c.summary[1:])
	var rows [][3]string
	if env := c.config.Env(); len(env) > 0 {
		rows = append(rows, [3]string{"environment:", "default:"})
		for _, v := range env {
			def := v.Default
			if v.Required {
				def = "required"
			}
			rows = append(rows, [3]string{"  " + v.Name, def, v.Doc})
		}
	}
	var flags [][3]string
	c.flagSet().VisitAll(func(f *flag.Flag) {
		arg, usage := flagArg(f)
		flags = append(flags, [3]string{strings.TrimRight("  --"+f.Name+" "+arg, " "), f.DefValue, usage})
	})
	if len(flags) > 0 {
		if len(rows) > 0 {
			rows = append(rows, [3]string{})
		}
		rows = append(rows, [3]string{"flags:", "default:"})
		rows = append(rows, flags...)
	}
	writeColumns(w, rows)
}

// writeColumns writes rows of up to three cells, each column as wide as its
// widest cell, without trailing spaces.
func writeColumns(w io.Writer, rows [][3]string) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 3, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r[0], r[1], r[2])
	}
	tw.Flush()
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// flagArg returns what f's argument is called in help, the back-quoted
// word of its usage or else its type, and its usage without the quotes.
func flagArg(f *flag.Flag) (arg, usage string) {
	arg, usage = flag.UnquoteUsage(f)
	if g, ok := f.Value.(flag.Getter); ok && arg == "value" {
		switch g.Get().(type) {
		case int:
			arg = "int"
		case time.Duration:
			arg = "duration"
		}
	}
	return arg, usage
}
