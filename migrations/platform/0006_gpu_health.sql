-- GPU health: a fatal Xid a host reports marks the device unhealthy until an
-- operator clears the mark; placement skips unhealthy devices.

-- +goose Up
ALTER TABLE host_gpus
    ADD COLUMN unhealthy_since timestamptz,
    ADD COLUMN health_reason   text,
    ADD COLUMN last_xid        integer,
    ADD COLUMN last_xid_at     timestamptz;

-- +goose Down
ALTER TABLE host_gpus DROP COLUMN unhealthy_since, DROP COLUMN health_reason,
    DROP COLUMN last_xid, DROP COLUMN last_xid_at;
