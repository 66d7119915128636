-- The host command that reboots an instance while it is REBOOTING: the
-- API moves a RUNNING instance to REBOOTING, the reconciler queues the
-- command and records it here, and the instance is RUNNING again once the
-- command ended. Leaving REBOOTING clears it.

-- +goose Up
ALTER TABLE instances ADD COLUMN reboot_command_id uuid REFERENCES host_commands (id);
CREATE INDEX instances_reboot_command ON instances (reboot_command_id) WHERE reboot_command_id IS NOT NULL;

-- +goose Down
ALTER TABLE instances DROP COLUMN reboot_command_id;
