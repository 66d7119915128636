package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
)

// deadLetterShown bounds the dead letters a finding names.
const deadLetterShown = 20

// topicKinds name a work entry's key by its topic's kind of object.
var topicKinds = map[string]ids.Kind{
	vps.TopicInstances: ids.Instance,
	vps.TopicSandboxes: ids.SandboxTemplate,
	vps.TopicSnapshots: ids.SandboxSnapshot,
	vps.TopicCommands:  ids.HostCommand,
}

// checkDeadLetters finds work-stream entries delivered too often and
// moved to the dead-letter stream (reconciler/stream.go): their objects
// were not converged from those entries (vps.work.dead-letters).
func checkDeadLetters(ctx context.Context, d *Doctor) ([]Finding, error) {
	if d.cfg.Redis == nil {
		return nil, nil
	}
	stream := d.cfg.Prefix + "work:dead"
	n, err := d.cfg.Redis.XLen(ctx, stream).Result()
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	msgs, err := d.cfg.Redis.XRevRangeN(ctx, stream, "+", "-", deadLetterShown).Result()
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	var objects []string
	for _, m := range msgs {
		topic, _ := m.Values["topic"].(string)
		key, _ := m.Values["key"].(string)
		if id, err := uuid.Parse(key); err == nil {
			if kind, ok := topicKinds[topic]; ok {
				key = ids.Encode(kind, id)
			}
		}
		if key != "" && !slices.Contains(objects, key) {
			objects = append(objects, key)
		}
	}
	return []Finding{{
		Code: "vps.work.dead-letters", Level: LevelWarning, Objects: objects,
		Message: fmt.Sprintf("%d work entries were delivered too often and dead-lettered (%s); the newest name %s", n, stream, strings.Join(objects, ", ")),
		Remedy:  "read the reconcile log for why they failed; a rescan converges their objects again once the cause is fixed; then trim the stream (XTRIM " + stream + " MAXLEN 0)",
	}}, nil
}
