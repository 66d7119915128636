package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/better-compute/vps/client"
)

func (a *app) instanceCmd() *cobra.Command {
	cmd := group("instance", "Create, list, change and delete instances", a.instanceCreateCmd(), a.instanceListCmd(), a.instanceGetCmd(),
		setCmd("start", "Start a stopped instance", client.InstanceStateRunning, a,
			func(ctx context.Context, api *client.Client, id string) (client.InstanceFields, error) {
				out, err := client.StartInstance(ctx, api, id)
				if err != nil {
					return client.InstanceFields{}, err
				}
				return out.StartInstance.Instance.InstanceFields, nil
			}, a.showInstance),
		setCmd("stop", "Stop an instance", client.InstanceStateStopped, a,
			func(ctx context.Context, api *client.Client, id string) (client.InstanceFields, error) {
				out, err := client.StopInstance(ctx, api, id)
				if err != nil {
					return client.InstanceFields{}, err
				}
				return out.StopInstance.Instance.InstanceFields, nil
			}, a.showInstance),
		setCmd("reboot", "Reboot a running instance (REBOOTING, then RUNNING)", client.InstanceStateRunning, a,
			func(ctx context.Context, api *client.Client, id string) (client.InstanceFields, error) {
				out, err := client.RebootInstance(ctx, api, id)
				if err != nil {
					return client.InstanceFields{}, err
				}
				return out.RebootInstance.Instance.InstanceFields, nil
			}, a.showInstance),
		setCmd("delete", "Delete an instance and release what it holds", client.InstanceStateDeleted, a,
			func(ctx context.Context, api *client.Client, id string) (client.InstanceFields, error) {
				out, err := client.DeleteInstance(ctx, api, id)
				if err != nil {
					return client.InstanceFields{}, err
				}
				return out.DeleteInstance.Instance.InstanceFields, nil
			}, a.showInstance))
	cmd.Aliases = []string{"instances"}
	return cmd
}

// waitFlags are --wait and --timeout, for a command that changes an
// instance.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until the instance is there, showing each state as it happens")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 10*time.Minute, "how long --wait waits")
}

func (a *app) instanceCreateCmd() *cobra.Command {
	var (
		in       client.CreateInstanceInput
		keys     []string
		userData string
		stopped  bool
		w        waitFlags
	)
	cmd := &cobra.Command{
		Use:   "create NAME --pool ID --flavor ID --image ID --ssh-key KEY",
		Short: "Create an instance",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			in.Name = as[0]
			if in.SshKeys, err = readAll(keys); err != nil {
				return usageError{err}
			}
			if userData != "" {
				data, err := readValue(userData)
				if err != nil {
					return usageError{err}
				}
				in.UserData = &data
			}
			want := client.InstanceStateRunning
			if stopped {
				state := client.DesiredStateStopped
				in.DesiredState = &state
				want = client.InstanceStateStopped
			}
			out, err := client.CreateInstance(cmd.Context(), api, in)
			if err != nil {
				return err
			}
			return a.showInstance(cmd.Context(), api, out.CreateInstance.Instance.InstanceFields, want, w)
		},
	}
	catalogFlags(cmd, &in.PoolId, &in.FlavorId, &in.ImageId)
	f := cmd.Flags()
	f.StringArrayVar(&keys, "ssh-key", nil, "an SSH public key, or @FILE to read one (required, repeatable)")
	f.StringVar(&userData, "user-data", "", "cloud-init user data, or @FILE to read it")
	f.BoolVar(&stopped, "stopped", false, "create it stopped")
	cmd.MarkFlagRequired("ssh-key")
	w.add(cmd)
	return cmd
}

func (a *app) instanceListCmd() *cobra.Command {
	var state string
	cmd := listCmd(a, "List instances", instanceHeader, instanceRow,
		func(ctx context.Context, api *client.Client, first int, after *string) ([]client.InstanceFields, client.PageFields, error) {
			var filter *client.InstanceFilter
			if state != "" {
				s := client.InstanceState(strings.ToUpper(state))
				filter = &client.InstanceFilter{State: &s}
			}
			out, err := client.ListInstances(ctx, api, &first, after, filter)
			if err != nil {
				return nil, client.PageFields{}, err
			}
			return out.Instances.Nodes, out.Instances.PageInfo, nil
		})
	cmd.Flags().StringVar(&state, "state", "", "only instances in this state (RUNNING, STOPPED, …)")
	return cmd
}

func (a *app) instanceGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show an instance",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			out, err := client.GetInstance(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			inst := out.Instance.InstanceFields
			return show(a.stdout, a.output, inst, instanceHeader, [][]string{instanceRow(inst)})
		},
	}
}

// setCmd is a command that changes one object, named by its ID, with set,
// then shows it with display, which with --wait first waits for want.
func setCmd[T any](verb, short string, want client.InstanceState, a *app,
	set func(context.Context, *client.Client, string) (T, error),
	display func(context.Context, *client.Client, T, client.InstanceState, waitFlags) error) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, as []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			v, err := set(cmd.Context(), api, as[0])
			if err != nil {
				return err
			}
			return display(cmd.Context(), api, v, want, w)
		},
	}
	w.add(cmd)
	return cmd
}

// catalogFlags adds the required --pool, --flavor and --image of a command
// that makes something of them.
func catalogFlags(cmd *cobra.Command, pool, flavor, image *string) {
	f := cmd.Flags()
	f.StringVar(pool, "pool", "", "the pool's ID (required; bcctl pool list)")
	f.StringVar(flavor, "flavor", "", "the flavor's ID (required; bcctl flavor list)")
	f.StringVar(image, "image", "", "the image's ID (required; bcctl image list)")
	for _, name := range []string{"pool", "flavor", "image"} {
		cmd.MarkFlagRequired(name)
	}
}

// seconds is d in whole seconds, as the API takes a timeout; nil when d
// is not set (zero or less).
func seconds(d time.Duration) *int {
	if d <= 0 {
		return nil
	}
	s := int(d.Seconds())
	return &s
}

// readAll reads each value of vs (readValue).
func readAll(vs []string) ([]string, error) {
	out := make([]string, len(vs))
	for i, v := range vs {
		var err error
		if out[i], err = readValue(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readValue is v, or the contents of file F for @F.
func readValue(v string) (string, error) {
	file, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

var instanceHeader = []string{"ID", "NAME", "STATE", "DESIRED", "ADDRESSES", "POOL", "FLAVOR", "REASON"}

func instanceRow(i client.InstanceFields) []string {
	return []string{i.Id, i.Name, string(i.State), string(i.DesiredState), orDash(joinComma(i.Addresses)),
		i.Pool.Name, i.Flavor.Name, orDash(deref(i.StateReason))}
}

// showInstance prints inst; with --wait it first waits for want, showing
// each state.
func (a *app) showInstance(ctx context.Context, api *client.Client, inst client.InstanceFields, want client.InstanceState, w waitFlags) error {
	if w.wait {
		var err error
		if inst, err = a.waitInstance(ctx, api, inst.Id, inst.Name, inst.State, want, w.timeout); err != nil {
			return err
		}
	}
	return show(a.stdout, a.output, inst, instanceHeader, [][]string{instanceRow(inst)})
}

// waitInstance waits for instance id to be in want, within timeout,
// showing on one progress line on stderr, after label, the state it was
// left in (from) and each state after as it happens.
func (a *app) waitInstance(ctx context.Context, api *client.Client, id, label string, from, want client.InstanceState, timeout time.Duration) (client.InstanceFields, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fmt.Fprintf(a.stderr, "%s:", label)
	last := client.InstanceState("")
	state := func(s client.InstanceState) {
		if s == last {
			return
		}
		if last != "" {
			fmt.Fprint(a.stderr, " →")
		}
		fmt.Fprintf(a.stderr, " %s", s)
		last = s
	}
	state(from)
	inst, err := api.Wait(ctx, id, want, func(i client.InstanceFields) { state(i.State) })
	fmt.Fprintln(a.stderr)
	return inst, err
}
