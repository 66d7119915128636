package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) loginCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "login --endpoint URL --token TOKEN [--name CONTEXT]",
		Short: "Save an API and a token as a context, checked first, and use it",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.endpoint == "" || a.token == "" {
				return usageError{fmt.Errorf("login needs --endpoint and --token")}
			}
			who, err := client.Viewer(cmd.Context(), client.New(a.endpoint, a.token, nil))
			if err != nil {
				return fmt.Errorf("log in to %s: %w", a.endpoint, err)
			}
			cfg, path, err := a.config()
			if err != nil {
				return err
			}
			cfg.Contexts[name] = Context{Endpoint: a.endpoint, Token: a.token}
			cfg.Current = name
			if err := cfg.save(path); err != nil {
				return err
			}
			p := who.Viewer.Principal
			as := fmt.Sprintf("%s (%s)", p.Name, p.Role)
			if p.Tenant != nil {
				as = fmt.Sprintf("%s (%s of %s)", p.Name, p.Role, p.Tenant.Name)
			}
			fmt.Fprintf(a.stdout, "Logged in to %s as %s; context %q is in use.\n", a.endpoint, as, name)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "default", "the context's name")
	return cmd
}

func (a *app) contextCmd() *cobra.Command {
	return group("context", "The saved contexts: an API and a token each", &cobra.Command{
		Use:   "list",
		Short: "List the saved contexts (tokens are not shown)",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			cfg, _, err := a.config()
			if err != nil {
				return err
			}
			type row struct {
				Name     string `json:"name"`
				Endpoint string `json:"endpoint"`
				Current  bool   `json:"current"`
			}
			var list []row
			var rows [][]string
			for _, n := range cfg.names() {
				cur := n == cfg.Current
				list = append(list, row{n, cfg.Contexts[n].Endpoint, cur})
				mark := ""
				if cur {
					mark = "*"
				}
				rows = append(rows, []string{mark, n, cfg.Contexts[n].Endpoint})
			}
			return show(a.stdout, a.output, list, []string{"CURRENT", "NAME", "ENDPOINT"}, rows)
		},
	}, &cobra.Command{
		Use:   "use NAME",
		Short: "Use a saved context from now on",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, as []string) error {
			cfg, path, err := a.config()
			if err != nil {
				return err
			}
			if _, ok := cfg.Contexts[as[0]]; !ok {
				return fmt.Errorf("no context %q (bcctl context list): %w", as[0], errNoContext)
			}
			cfg.Current = as[0]
			return cfg.save(path)
		},
	})
}
