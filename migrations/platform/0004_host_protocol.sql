-- The host protocol version each host's daemon speaks, as it last said on a
-- report or a spec poll; NULL until then. Placement gives a host only the
-- instances its version can honour (docs/host-protocol.md, "Versions").

-- +goose Up
ALTER TABLE hosts ADD COLUMN protocol smallint CHECK (protocol > 0);

-- +goose Down
ALTER TABLE hosts DROP COLUMN protocol;
