package control

import (
	"context"
	"errors"

	"github.com/better-compute/vps/doctor"
)

// Doctor returns what operators must look at: the doctor's findings.
// Operators only.
func (s *Service) Doctor(ctx context.Context) ([]doctor.Finding, error) {
	if _, err := operator(ctx); err != nil {
		return nil, err
	}
	if s.doctor == nil {
		return nil, errors.New("the doctor is not configured")
	}
	return s.doctor.Run(ctx)
}
