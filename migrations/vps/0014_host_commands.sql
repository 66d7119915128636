-- Host commands: one-off work a host does with a result (a snapshot, a
-- purge, later a reboot), beside the desired state of its NodeSpec. A
-- command is in its host's spec from when it is queued until the host
-- acknowledges its end (acknowledged_at). The control plane fails a command
-- past its deadline (FAILED, abandoned_at): the spec then tells the host to
-- abandon it and clean up, and it leaves the spec once the host reports it
-- abandoned. (0014 was kept free for the vps.sandboxes reconciler, which
-- needed none.)

-- +goose Up
CREATE TABLE host_commands (
    id               uuid PRIMARY KEY,
    host_id          uuid NOT NULL REFERENCES hosts (id),
    kind             text NOT NULL,
    lane             text NOT NULL CHECK (lane IN ('interactive', 'bulk')),
    payload          jsonb NOT NULL,
    state            text NOT NULL DEFAULT 'QUEUED' CHECK (state IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
    attempt          integer NOT NULL DEFAULT 1 CHECK (attempt > 0),
    deadline         timestamptz NOT NULL,
    progress         integer NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    result           jsonb,
    error            text NOT NULL DEFAULT '',
    abandoned_at     timestamptz,
    acknowledged_at  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    CHECK (abandoned_at IS NULL OR state = 'FAILED')
);
-- What a host's spec lists.
CREATE INDEX host_commands_open ON host_commands (host_id, created_at) WHERE acknowledged_at IS NULL;
-- What the deadline sweep reads.
CREATE INDEX host_commands_deadline ON host_commands (deadline) WHERE state IN ('QUEUED', 'RUNNING');

-- The command that takes a snapshot, and the one that purges it.
ALTER TABLE sandbox_snapshots
    ADD COLUMN command_id uuid REFERENCES host_commands (id),
    ADD COLUMN purge_command_id uuid REFERENCES host_commands (id);

-- +goose Down
ALTER TABLE sandbox_snapshots DROP COLUMN purge_command_id, DROP COLUMN command_id;
DROP TABLE host_commands;
