package reconciler

import (
	"github.com/google/uuid"

	"github.com/better-compute/vps/ids"
	"github.com/better-compute/vps/internal/vps"
)

// topicKinds are the kinds of object the keys of the work topics name.
var topicKinds = map[string]ids.Kind{
	vps.TopicInstances:  ids.Instance,
	vps.TopicSandboxes:  ids.SandboxTemplate,
	vps.TopicSnapshots:  ids.SandboxSnapshot,
	vps.TopicCommands:   ids.HostCommand,
	vps.TopicBootstraps: ids.ProviderBootstrap,
}

// keyID is a work entry's key as logs name it: the API ID of the object
// it names, or the key as it is when it names none.
func keyID(topic, key string) string {
	k, known := topicKinds[topic]
	id, err := uuid.Parse(key)
	if !known || err != nil {
		return key
	}
	return ids.Encode(k, id)
}

// labelID is a provider server's instance label as logs name it: the
// instance's API ID when the label is one's UUID.
func labelID(label string) string { return keyID(vps.TopicInstances, label) }
