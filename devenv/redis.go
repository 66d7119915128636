package devenv

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Redis starts an in-process Redis and returns its URL and a stop func.
func Redis() (string, func(), error) {
	m, err := miniredis.Run()
	if err != nil {
		return "", nil, fmt.Errorf("start in-process redis: %w", err)
	}
	return "redis://" + m.Addr(), m.Close, nil
}
