package control

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/better-compute/vps/audit"
	"github.com/better-compute/vps/sqlc"
)

// Resealed says what Reseal did.
type Resealed struct {
	// UserData, Credentials, Env and HostCAKeys count the values sealed
	// again; Env counts sandbox templates' and their instances'
	// environments.
	UserData, Credentials, Env, HostCAKeys int
	// Failed names the values that would not open with any configured
	// secret; they are left as they are.
	Failed []string
}

// sealedRow is one sealed value and the ID it is bound to.
type sealedRow struct {
	id     uuid.UUID
	sealed []byte
}

// Reseal seals every value another key sealed — instances' user data,
// provider accounts' credentials, the env of sandbox templates and of
// their instances, and the host CAs' keys — under the current key, so the previous
// secrets can be dropped from BC_SECRET_PREVIOUS. Each value is written by
// a compare-and-set of its own, so it runs safely beside the servers and may
// be run again; the run is audited.
func (s *Service) Reseal(ctx context.Context) (Resealed, error) {
	var out Resealed
	if s.sealer == nil {
		return out, fmt.Errorf("no sealer configured")
	}
	key := s.sealer.KeyID()
	var err error
	out.UserData, err = s.resealAll(ctx, "instance", &out.Failed,
		func(ctx context.Context, after uuid.UUID) ([]sealedRow, error) {
			rows, err := s.q.StaleUserData(ctx, sqlc.StaleUserDataParams{KeyID: key, After: after})
			page := make([]sealedRow, len(rows))
			for i, r := range rows {
				page[i] = sealedRow{r.ID, r.UserDataSealed}
			}
			return page, err
		},
		func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error) {
			return s.q.ResealUserData(ctx, sqlc.ResealUserDataParams{ID: id, Was: was, Sealed: sealed})
		})
	if err != nil {
		return out, err
	}
	out.Credentials, err = s.resealAll(ctx, "provider account", &out.Failed,
		func(ctx context.Context, after uuid.UUID) ([]sealedRow, error) {
			rows, err := s.q.StaleProviderCredentials(ctx, sqlc.StaleProviderCredentialsParams{KeyID: key, After: after})
			page := make([]sealedRow, len(rows))
			for i, r := range rows {
				page[i] = sealedRow{r.ID, r.CredentialsSealed}
			}
			return page, err
		},
		func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error) {
			return s.q.ResealProviderCredentials(ctx, sqlc.ResealProviderCredentialsParams{ID: id, Was: was, Sealed: sealed})
		})
	if err != nil {
		return out, err
	}
	for _, kind := range []struct {
		what  string
		stale func(context.Context, uuid.UUID) ([]sealedRow, error)
		store func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error)
	}{
		{"sandbox template env", func(ctx context.Context, after uuid.UUID) ([]sealedRow, error) {
			rows, err := s.q.StaleTemplateEnv(ctx, sqlc.StaleTemplateEnvParams{KeyID: key, After: after})
			page := make([]sealedRow, len(rows))
			for i, r := range rows {
				page[i] = sealedRow{r.ID, r.Env}
			}
			return page, err
		}, func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error) {
			return s.q.ResealTemplateEnv(ctx, sqlc.ResealTemplateEnvParams{ID: id, Was: was, Sealed: sealed})
		}},
		{"instance env", func(ctx context.Context, after uuid.UUID) ([]sealedRow, error) {
			rows, err := s.q.StaleInstanceEnv(ctx, sqlc.StaleInstanceEnvParams{KeyID: key, After: after})
			page := make([]sealedRow, len(rows))
			for i, r := range rows {
				page[i] = sealedRow{r.ID, r.EnvSealed}
			}
			return page, err
		}, func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error) {
			return s.q.ResealInstanceEnv(ctx, sqlc.ResealInstanceEnvParams{ID: id, Was: was, Sealed: sealed})
		}},
	} {
		n, err := s.resealAll(ctx, kind.what, &out.Failed, kind.stale, kind.store)
		out.Env += n
		if err != nil {
			return out, err
		}
	}
	out.HostCAKeys, err = s.resealAll(ctx, "host CA", &out.Failed,
		func(ctx context.Context, after uuid.UUID) ([]sealedRow, error) {
			rows, err := s.q.StaleHostCAKeys(ctx, sqlc.StaleHostCAKeysParams{KeyID: key, After: after})
			page := make([]sealedRow, len(rows))
			for i, r := range rows {
				page[i] = sealedRow{r.ID, r.KeySealed}
			}
			return page, err
		},
		func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error) {
			return s.q.ResealHostCAKey(ctx, sqlc.ResealHostCAKeyParams{ID: id, Was: was, Sealed: sealed})
		})
	if err != nil {
		return out, err
	}
	err = s.mutate(ctx, ActReseal, func(ctx context.Context, _ pgx.Tx, _ *sqlc.Queries, ev *audit.Event) error {
		ev.Details = map[string]any{"userData": out.UserData, "credentials": out.Credentials, "env": out.Env, "hostCAKeys": out.HostCAKeys, "failed": len(out.Failed)}
		return nil
	})
	return out, err
}

// resealAll pages through the stale values of one kind and seals each
// again, counting those written.
func (s *Service) resealAll(ctx context.Context, what string, failed *[]string,
	stale func(context.Context, uuid.UUID) ([]sealedRow, error),
	store func(ctx context.Context, id uuid.UUID, was, sealed []byte) (int64, error)) (int, error) {
	n := 0
	after := uuid.Nil
	for {
		rows, err := stale(ctx, after)
		if err != nil {
			return n, fmt.Errorf("list stale %s values: %w", what, err)
		}
		if len(rows) == 0 {
			return n, nil
		}
		for _, r := range rows {
			after = r.id
			sealed, changed, err := s.sealer.Reseal(r.sealed, r.id[:])
			if err != nil {
				*failed = append(*failed, fmt.Sprintf("%s %s: %v", what, r.id, err))
				continue
			}
			if !changed {
				continue
			}
			written, err := store(ctx, r.id, r.sealed, sealed)
			if err != nil {
				return n, fmt.Errorf("reseal %s %s: %w", what, r.id, err)
			}
			n += int(written)
		}
	}
}
