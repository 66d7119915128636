package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/better-compute/vps/app"
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/ids"
)

func runToken(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: better-compute token create --name NAME [--tenant tnt_…] [--expires 720h]")
	}
	fs := flag.NewFlagSet("token create", flag.ExitOnError)
	name := fs.String("name", "", "`name` of the new principal and token")
	tenant := fs.String("tenant", "", "tenant `id` to make a member of; none makes an operator")
	expires := fs.Duration("expires", 0, "lifetime of the token; 0 never expires")
	fs.Parse(args[1:])

	in := control.APITokenInput{Name: *name}
	if *tenant != "" {
		id, ok := ids.Decode(ids.Tenant, *tenant)
		if !ok {
			return fmt.Errorf("--tenant %q is not a tenant id", *tenant)
		}
		in.TenantID = id
	}
	if *expires > 0 {
		at := time.Now().Add(*expires)
		in.ExpiresAt = &at
	}
	db, err := app.OpenDB(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := control.New(db, control.Config{}).IssueToken(ctx, in)
	if err != nil {
		return err
	}
	fmt.Println(out.Secret)
	return nil
}
